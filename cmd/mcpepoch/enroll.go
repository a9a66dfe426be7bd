package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mcpepoch/mcpepoch/ceremony"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/trust"
)

// runEnroll adds an authenticator to the trust store: a WebAuthn
// credential registered on a local page (--web), or an OpenSSH FIDO key
// (--ssh KEY.pub). Once one is enrolled, adding another takes a touch of
// an enrolled WebAuthn authenticator on a confirmation page; the first is
// trusted on first use, and said so.
func runEnroll(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("enroll", stdio.Err, "--web | --ssh KEY.pub [--name NAME] [--no-open]")
	web := fs.Bool("web", false, "register a WebAuthn authenticator (a security key, Touch ID …) on a local page")
	sshKey := fs.String("ssh", "", "enroll an OpenSSH FIDO public key (sk-ssh-ed25519, sk-ecdsa), the content of KEY.pub")
	name := fs.String("name", "", "name shown in "+selfcmd.Name()+" authenticators (default: the key's comment, or \"authenticator\")")
	noOpen := fs.Bool("no-open", false, "print the page's URL, open no browser")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *web == (*sshKey != "") {
		return usageError("give exactly one of --web and --ssh KEY.pub")
	}
	dir, err := trust.DefaultDir()
	if err != nil {
		return err
	}
	srv, err := ceremony.Listen(ceremony.Config{TrustDir: dir})
	if err != nil {
		return err
	}
	defer func() {
		// The page's last answer is written after the result is
		// delivered here: give it a moment before the server closes.
		time.Sleep(500 * time.Millisecond)
		srv.Close()
	}()
	if *web {
		return enrollWeb(ctx, srv, dir, *name, *noOpen, stdio)
	}
	return enrollSSH(ctx, srv, dir, *sshKey, *name, *noOpen, stdio)
}

// enrollWeb registers one WebAuthn authenticator through the page. On an
// empty store the page opens only after the person guard (confirmRoot),
// the same as for a first ssh key.
func enrollWeb(ctx context.Context, srv *ceremony.Server, dir, name string, noOpen bool, stdio Stdio) error {
	if name == "" {
		name = "authenticator"
	}
	s, err := trust.Open(dir)
	if err != nil {
		return err
	}
	root := ""
	if len(s.Authenticators) == 0 {
		if root, err = confirmRoot(ctx, webRootQuestion(name), stdio); err != nil {
			return err
		}
	}
	e, err := srv.Enroll(name, root)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdio.Out, e.URL())
	fmt.Fprintln(stdio.Err, "register the authenticator on the page (button Register)")
	if !noOpen {
		openBrowser(e.URL())
	}
	select {
	case got := <-e.Done():
		reportEnrolled(stdio, got.Authenticator, got.FirstUse)
		return nil
	case <-ctx.Done():
		e.Cancel()
		return ctx.Err()
	}
}

// enrollSSH adds an ssh FIDO key, confirmed by a touch on the page when an
// authenticator is already enrolled.
func enrollSSH(ctx context.Context, srv *ceremony.Server, dir, keyFile, name string, noOpen bool, stdio Stdio) error {
	b, err := safefile.ReadFile(keyFile, 64<<10)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--ssh %s: %v", keyFile, err)}
	}
	if isPrivateKey(b) {
		return &exitError{code: exitUsage, err: fmt.Errorf("--ssh %s: this is a private key: pass the public key %s.pub", keyFile, keyFile)}
	}
	a, err := trust.NewSSH(b, name, time.Now())
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--ssh %s: %v", keyFile, err)}
	}
	s, err := trust.Open(dir)
	if err != nil {
		return err
	}
	c, err := s.Propose(trust.OpAdd, a)
	if err != nil {
		return err
	}
	if !c.Requirement.Presence {
		how, err := confirmRoot(ctx, rootQuestion(a), stdio)
		if err != nil {
			return err
		}
		a.Enrolled = how
		if c, err = s.Propose(trust.OpAdd, a); err != nil {
			return err
		}
		if err := s.Apply(c, nil); err != nil {
			return err
		}
		reportEnrolled(stdio, a, true)
		return nil
	}
	page, err := srv.ApproveChange(c)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdio.Out, page.URL())
	fmt.Fprintln(stdio.Err, "confirm with an enrolled authenticator on the page")
	if !noOpen {
		openBrowser(page.URL())
	}
	select {
	case d := <-page.Decided():
		if d.Outcome != ceremony.Approved {
			return &exitError{code: exitFailure, err: fmt.Errorf("not enrolled: the page ended %s", d.Outcome)}
		}
		reportEnrolled(stdio, a, false)
		return nil
	case <-ctx.Done():
		page.Cancel()
		return ctx.Err()
	}
}

// reportEnrolled says what was enrolled, loudly when it was trusted on
// first use.
func reportEnrolled(stdio Stdio, a trust.Authenticator, firstUse bool) {
	fmt.Fprintf(stdio.Err, "enrolled %s authenticator %q (%s), %s\n", a.Kind, printable(a.Name), printable(a.ID), printable(a.Attestation().String()))
	if firstUse {
		fmt.Fprintln(stdio.Err, "WARNING: this is the first authenticator: it was trusted on first use, without a signature by another.")
		fmt.Fprintln(stdio.Err, "WARNING: check with '"+selfcmd.Name()+" authenticators' that it is yours; hosts started from now on require presence by default.")
	}
}

// runAuthenticators lists the trust store.
func runAuthenticators(_ context.Context, args []string, stdio Stdio) error {
	fs := newFlags("authenticators", stdio.Err, "")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	dir, err := trust.DefaultDir()
	if err != nil {
		return err
	}
	s, err := trust.Open(dir)
	var tampered *trust.TamperedError
	if err != nil && !errors.As(err, &tampered) {
		return err
	}
	if len(s.Authenticators)+len(s.Unconfirmed) == 0 {
		fmt.Fprintf(stdio.Err, "no authenticator enrolled in %s: run "+selfcmd.Name()+" enroll --web or --ssh KEY.pub\n", s.Path())
		return nil
	}
	for i, a := range s.Authenticators {
		by := "confirmed by " + a.AddedBy
		if i == 0 {
			by = "ROOT: first, trusted on first use, " + enrolledHow(a.Enrolled)
		}
		listAuthenticator(stdio, a, by)
	}
	for _, u := range s.Unconfirmed {
		listAuthenticator(stdio, u.Authenticator, "UNCONFIRMED: "+u.Why)
	}
	if tampered != nil {
		return err
	}
	fmt.Fprintf(stdio.Out, "store %s, digest %s, root %s\n", s.Path(), s.Digest(), printable(s.Root().ID))
	if v := s.Root().Attestation(); !v.OK {
		fmt.Fprintf(stdio.Err, "WARNING: the root %s\n", trust.UnattestedWarning)
	}
	return nil
}

// listAuthenticator prints one entry: kind, name, id, when and how it was
// added, attested or not, and its counter.
func listAuthenticator(stdio Stdio, a trust.Authenticator, by string) {
	fmt.Fprintf(stdio.Out, "%-8s %-20s %s  added %s (%s), %s, counter %d\n", a.Kind, printable(a.Name), printable(a.ID),
		a.AddedAt.Local().Format(time.DateTime), printable(by), printable(a.Attestation().String()), a.SignCount)
}

// enrolledHow says how a root was enrolled (trust.Authenticator.Enrolled).
func enrolledHow(how string) string {
	switch how {
	case "":
		return "how not recorded"
	case trust.EnrolledTerminal:
		return "enrolled at a terminal"
	default:
		return "enrolled by " + printable(how)
	}
}

// printRoot writes, beside a short code a person checks, which
// authenticator is the trust store's root and, when it is not attested,
// the plain warning: a presence approval proves no more than the root.
func printRoot(w io.Writer) {
	dir, err := trust.DefaultDir()
	if err != nil {
		return
	}
	s, err := trust.Open(dir)
	if err != nil || s.Root() == nil {
		return
	}
	r := s.Root()
	fmt.Fprintf(w, "root of the trust store: %s %q (%s), %s, %s\n", r.Kind, printable(r.Name), printable(r.ID),
		enrolledHow(r.Enrolled), printable(r.Attestation().String()))
	if !r.Attestation().OK {
		fmt.Fprintf(w, "WARNING: the root was %s\n", trust.UnattestedWarning)
	}
}
