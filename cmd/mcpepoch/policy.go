package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/floor"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/sshsig"
	"github.com/mcpepoch/mcpepoch/trust"
)

// policyState is what mcpepoch policy compares: the project's
// mcpepoch.toml and its policy floor in the trust store.
type policyState struct {
	root     string // the project root, as the host keeps its floor for it
	dir      string // the project root as found (its .mcpepoch holds the audit log)
	cfg      *config.Config
	store    *trust.Store
	enrolled bool
	floor    *trust.Floor // nil: no host has seen the project yet
	// missing: what a host would find gone (floor.MissingNote): the floor
	// (floor is then the strictest, which a host puts in force) or the
	// trust root (enrolled is then true: presence is the default proof).
	missing string
	// from is the floor an acceptance names as the one it replaces: floor,
	// or where the floor is missing the last floor a host held
	// (floor.Prior.LastHeldFloor), which a host that starts checks the file
	// against; nil: floor.
	from *trust.Floor
	// prior is what the audit log says of earlier hosts, read once when
	// first needed (priorLog).
	prior *floor.Prior
}

// priorLog returns what the project's audit log says of earlier hosts,
// reading it on the first call only.
func (st *policyState) priorLog() *floor.Prior {
	if st.prior == nil {
		st.prior = floor.ReadPrior(st.dir)
	}
	return st.prior
}

// replaced is the floor an acceptance names as the one it replaces.
func (st *policyState) replaced() trust.Floor {
	if st.from != nil {
		return *st.from
	}
	return *st.floor
}

// runPolicy is mcpepoch policy [show|accept]: show prints the project's
// policy floor beside mcpepoch.toml, setting by setting; accept makes
// mcpepoch.toml's policy the floor, weakenings included, once a person
// proves themself at the floor's own proof level.
func runPolicy(ctx context.Context, args []string, stdio Stdio) error {
	sub := "show"
	if len(args) > 0 && (args[0] == "show" || args[0] == "accept") {
		sub, args = args[0], args[1:]
	}
	fs := newFlags("policy "+sub, stdio.Err, "[--dir DIR] [--json]")
	dirFlag := fs.String("dir", ".", "a directory of the project")
	asJSON := fs.Bool("json", false, "print the floor, the file's policy and their differences as JSON (show)")
	sshKey := fs.String("ssh", "", "accept with an enrolled OpenSSH FIDO key (proof presence): ssh-keygen -Y sign -f KEY signs the change's digest")
	yes := fs.Bool("yes", false, "accept without asking; counts only where the floor's [grants] proof names same-user")
	web := fs.Bool("web", false, "accept on a page with an enrolled WebAuthn authenticator (proof presence): prints its URL and waits")
	noOpen := fs.Bool("no-open", false, "with --web, print the page's URL without opening a browser")
	if sub == "accept" {
		fs.Usage = func() {
			fmt.Fprint(stdio.Err, "usage: "+selfcmd.Name()+" policy accept [--dir DIR] [--ssh KEY | --web [--no-open] | --yes]\n\n")
			printDefaults(stdio.Err, fs)
		}
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("policy %s takes no arguments, got %q", sub, fs.Args())
	}
	st, err := loadPolicy(*dirFlag)
	if err != nil {
		return err
	}
	if sub == "accept" {
		if n := countTrue(*sshKey != "", *web, *yes); n > 1 {
			return usageError("--ssh, --web and --yes are three ways to accept: name one")
		}
		return acceptPolicy(ctx, st, acceptWith{ssh: *sshKey, web: *web, noOpen: *noOpen, yes: *yes}, stdio)
	}
	return showPolicy(st, *asJSON, stdio)
}

// loadPolicy reads the project's mcpepoch.toml, the trust store and the
// project's floor.
func loadPolicy(dir string) (*policyState, error) {
	root, err := findRoot(dir)
	if err != nil {
		return nil, err
	}
	st := &policyState{root: trust.FloorRoot(root), dir: root}
	if st.cfg, err = config.Load(root); err != nil {
		return nil, err
	}
	tdir, err := trust.DefaultDir()
	if err != nil {
		return nil, err
	}
	if st.store, err = trust.Open(tdir); err != nil {
		return nil, fmt.Errorf("trust store: %w", err)
	}
	st.enrolled = len(st.store.Authenticators) > 0
	if st.floor, err = trust.LoadFloor(tdir, st.root); err != nil {
		return nil, fmt.Errorf("policy floor: %w (a host counts it as the strictest floor until it is fixed)", err)
	}
	// As a host would see it at start: a floor or root gone missing is
	// not a first use.
	if st.floor == nil || !st.enrolled {
		st.missing = st.priorLog().MissingNote(tdir, st.floor != nil, st.enrolled)
	}
	if st.missing != "" {
		st.enrolled = true
		if st.floor == nil {
			s := floor.Strictest(st.root, st.cfg)
			st.floor = &s
			if last := st.priorLog().LastHeldFloor(); last != nil && last.Root == st.root {
				st.from = last
			}
		}
	}
	return st, nil
}

// showPolicy prints the floor and each setting where mcpepoch.toml
// differs from it.
func showPolicy(st *policyState, asJSON bool, stdio Stdio) error {
	var diff []trust.Difference
	if st.floor != nil {
		diff = st.floor.Diff(st.cfg, st.enrolled)
	}
	if asJSON {
		out := map[string]any{"root": st.root, "floor": st.floor, "differences": nonNilDiff(diff)}
		if st.floor != nil {
			out["floorFile"] = trust.FloorPath(st.store.Dir(), st.root)
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdio.Out, "%s\n", b)
		return nil
	}
	if st.floor == nil {
		fmt.Fprintf(stdio.Out, "project %s has no policy floor yet: the first host to start for it makes the grants policy of %s its floor\n",
			printable(st.root), config.FileName)
		return nil
	}
	f := st.floor
	if st.missing != "" {
		fmt.Fprintf(stdio.Out, "%s\n", printable(st.missing))
	}
	if f.UpdatedBy == "" {
		fmt.Fprintf(stdio.Out, "policy floor of %s: the strictest, in force while %s is missing\n", printable(st.root),
			printable(trust.FloorPath(st.store.Dir(), st.root)))
	} else {
		fmt.Fprintf(stdio.Out, "policy floor of %s (%s)\n  updated %s by %s\n", printable(st.root),
			printable(trust.FloorPath(st.store.Dir(), st.root)), f.UpdatedAt.Local().Format(time.DateTime), printable(f.UpdatedBy))
	}
	fmt.Fprintf(stdio.Out, "  proof required to accept a weakening: %s\n", floorProofText(f, st.enrolled))
	if len(diff) == 0 {
		fmt.Fprintf(stdio.Out, "%s holds the same policy as the floor\n", config.FileName)
		return nil
	}
	weak := 0
	for _, d := range diff {
		note := "stronger: a host puts it in force at once"
		if d.Weakens {
			note, weak = "WEAKER: not applied; in force "+printable(d.InForce), weak+1
		}
		fmt.Fprintf(stdio.Out, "  %s: floor %s → %s %s (%s)\n", printable(d.Setting), printable(d.Floor), config.FileName, printable(d.File), note)
	}
	if weak > 0 {
		fmt.Fprintf(stdio.Out, "%d setting(s) of %s weaken the floor: a person accepts them with "+selfcmd.Name()+" policy accept, proven at %s\n",
			weak, config.FileName, floorProof(f, st.enrolled))
	}
	return nil
}

func nonNilDiff(d []trust.Difference) []trust.Difference {
	if d == nil {
		return []trust.Difference{}
	}
	return d
}

// floorProof is the proof list a change of the floor needs: its
// grants.proof (approval.DefaultProof when unset) made stricter by each
// credential scope's own (trust.Floor.AcceptanceProof), as the host
// checks it.
func floorProof(f *trust.Floor, enrolled bool) approval.Proofs {
	return f.AcceptanceProof(enrolled)
}

// floorProofText is floorProof as show prints it, naming why the default
// list holds when the floor sets none: "terminal, client (the default: no
// authenticator is enrolled)".
func floorProofText(f *trust.Floor, enrolled bool) string {
	s := floorProof(f, enrolled).String()
	if f.Proof == nil {
		if enrolled {
			return s + " (the default: an authenticator is enrolled)"
		}
		return s + " (the default: no authenticator is enrolled)"
	}
	return s
}

// acceptPolicy shows each weakening, proves the person at the floor's
// level, audits policy_accepted, then writes mcpepoch.toml's policy as
// the floor, with the acceptance a host checks before it takes it
// (trust.Acceptance: the floor replaced, the nonce, the signature). A
// running host reads it at its next build signal.
func acceptPolicy(ctx context.Context, st *policyState, with acceptWith, stdio Stdio) error {
	if st.floor == nil {
		fmt.Fprintf(stdio.Err, "project %s has no policy floor yet: nothing to accept (the first host start makes %s its floor)\n", printable(st.root), config.FileName)
		return nil
	}
	var weak []trust.Difference
	for _, d := range st.floor.Diff(st.cfg, st.enrolled) {
		if d.Weakens {
			weak = append(weak, d)
		}
	}
	if len(weak) == 0 && st.floor.UpdatedBy == "" {
		// The floor is missing and the file is as strict as the strictest:
		// writing it back opens nothing.
		unlock, err := trust.LockFloors(st.store.Dir())
		if err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		defer unlock()
		if !floorUnchanged(st) {
			return notAccepted("a policy floor was written meanwhile: run " + selfcmd.Name() + " policy again")
		}
		if err := trust.SaveFloor(st.store.Dir(), trust.FloorOf(st.root, st.cfg), "restored", time.Now()); err != nil {
			return &exitError{code: exitFailure, err: err}
		}
		fmt.Fprintf(stdio.Err, "%s does not weaken the strictest floor: it is the project's floor again; a host takes it when it starts\n", config.FileName)
		return nil
	}
	if len(weak) == 0 {
		fmt.Fprintf(stdio.Err, "%s does not weaken the policy floor: nothing to accept (a host puts a stronger policy in force by itself)\n", config.FileName)
		return nil
	}
	next, nonce := trust.FloorOf(st.root, st.cfg), grant.NewNonce()
	d := trust.AcceptDigest(st.replaced(), next, nonce)
	fmt.Fprintf(stdio.Err, "%s weakens the policy floor of %s (change code %s):\n", config.FileName, printable(st.root), d.ShortCode())
	for _, w := range weak {
		fmt.Fprintf(stdio.Err, "  %s: %s → %s\n", printable(w.Setting), printable(w.Floor), printable(w.File))
	}
	pr, err := proveAccept(ctx, st, d, weak, with, stdio)
	if err != nil {
		return err
	}
	unlock, err := trust.LockFloors(st.store.Dir())
	if err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	defer unlock()
	if !floorUnchanged(st) {
		return notAccepted("the policy floor changed while you were asked (a host raised it): run " + selfcmd.Name() + " policy accept again")
	}
	if err := auditAccepted(st, weak, d, pr); err != nil {
		return &exitError{code: exitFailure, err: fmt.Errorf("not accepted: the audit log: %w", err)}
	}
	// What a host checks before it takes the floor: the acceptance names
	// the floor replaced, and for presence carries the signature.
	next.Accepted = &trust.Acceptance{Proof: string(pr.Proof), Channel: pr.Channel, From: st.replaced().Digest().String(), Nonce: nonce,
		Authenticator: pr.Authenticator, SignCount: pr.SignCount, Signature: pr.Signature, WebAuthn: pr.assertion}
	if err := trust.SaveFloor(st.store.Dir(), next, trust.AcceptedBy+string(pr.Proof), time.Now()); err != nil {
		return &exitError{code: exitFailure, err: err}
	}
	when := "a running host puts it in force from its next epoch: run " + selfcmd.Name() + " restart to start one now (a build that changes the server does too)"
	if st.floor.UpdatedBy == "" {
		when = "a running host, which holds the strictest floor, takes it when it starts again (reconnect the client)"
	}
	fmt.Fprintf(stdio.Err, "accepted (proof %s): the floor is %s's policy now; %s\n", pr.Proof, config.FileName, when)
	// A running host reads the floor file when asked its status, so that
	// its status and refusals say the change was accepted from now on, not
	// that a person must accept it. Best effort: a host that does not
	// answer reads it at its next epoch all the same.
	askHosts(ctx, st.dir, 2*time.Second, notify.Request{Type: localapi.TypeStatus})
	return nil
}

// floorUnchanged reports whether the floor file still holds st.floor, or,
// where the floor is missing (st.floor is the strictest), is still absent.
func floorUnchanged(st *policyState) bool {
	now, err := trust.LoadFloor(st.store.Dir(), st.root)
	if err != nil {
		return false
	}
	if st.floor.UpdatedBy == "" {
		return now == nil
	}
	return now != nil && now.Digest() == st.floor.Digest()
}

// acceptWith is how policy accept was asked to prove the person: --ssh
// KEY, --web (--no-open), --yes, or none (the terminal).
type acceptWith struct {
	ssh              string
	web, noOpen, yes bool
}

// acceptProof is how the person who accepted was proven (the channels of
// package approval, as for an approval) and, on the page, the assertion
// the floor file keeps.
type acceptProof struct {
	approval.Proven
	assertion *trust.Assertion // channel "web"
}

// proveAccept proves a person at the floor's own proof level: an enrolled
// FIDO ssh key's signature over d, or an enrolled WebAuthn authenticator's
// assertion on a page (presence, which always counts), else
// an answer at this process's terminal where the floor counts terminal and
// a running host of the project tells it from the agent's (apartFromAgent:
// the terminal rule approval.AtTerminal, the one a host's approve route
// runs on its sender, then [y/N] on /dev/tty), else --yes where it
// counts same-user. Nothing else accepts.
func proveAccept(ctx context.Context, st *policyState, d grant.Digest, weak []trust.Difference, with acceptWith, stdio Stdio) (acceptProof, error) {
	need := floorProof(st.floor, st.enrolled)
	switch {
	case with.ssh != "":
		return signAccept(ctx, st, d, with.ssh, stdio)
	case with.web:
		return acceptOnPage(ctx, st, d, weak, with.noOpen, stdio)
	case with.yes:
		if !need.Counts(approval.ProofSameUser) {
			return acceptProof{}, notAccepted("--yes proves no person, and this floor counts only %s: %s", need, acceptHow(need))
		}
		return acceptProof{Proven: approval.Proven{Proof: approval.ProofSameUser, Channel: approval.ChannelScript}}, nil
	case need.Counts(approval.ProofTerminal):
		if err := apartFromAgent(ctx, st); err != nil {
			return acceptProof{}, notAccepted("%v; a weakening of the floor is accepted at a terminal only while a running host of this project that identified its MCP client tells this terminal from the agent's, else it needs presence: a person runs %s enroll, then %s policy accept --web (or --ssh KEY) and touches it",
				err, selfcmd.Name(), selfcmd.Name())
		}
		if _, err := askAtTerminal(ctx, fmt.Sprintf("accept these weakenings (change code %s)?", d.ShortCode())); err != nil {
			return acceptProof{}, notAccepted("%v", err)
		}
		return acceptProof{Proven: approval.Proven{Proof: approval.ProofTerminal, Channel: approval.ChannelTerminal}}, nil
	}
	return acceptProof{}, notAccepted("this floor counts only %s: %s", need, acceptHow(need))
}

// apartFromAgent reports why this process cannot be told apart from the
// agent's for a weakening of st's floor (approval.TellsApart), or nil
// where the test build's stand-in for a person answers (testBuildPerson).
// The project's running hosts are the processes listening on its sockets,
// by the kernel's word (notify.Result.Peer), that answer status as hosts
// of this very project root (a socket file can be linked in from another
// project; a real host names its own root); a host busy, silent or
// unreachable is not one.
func apartFromAgent(ctx context.Context, st *policyState) error {
	if testBuildPerson != nil && testBuildPerson() {
		return nil
	}
	var hosts []int
	unnamed := 0
	for _, r := range askHosts(ctx, st.dir, 2*time.Second, notify.Request{Type: localapi.TypeStatus}) {
		if r.Err != nil {
			continue
		}
		s, err := localapi.DecodePayload[localapi.Status](r.Response.Payload)
		if err != nil || s.Root == "" || s.Root != st.root {
			continue
		}
		if !r.Peer.Checked || r.Peer.PID <= 0 {
			unnamed++
			continue
		}
		hosts = append(hosts, r.Peer.PID)
	}
	if len(hosts) == 0 && unnamed > 0 {
		// Inside another PID namespace (a sandbox) the kernel names no pid
		// for a process outside it: the host answers, but cannot be examined.
		return fmt.Errorf("%d host(s) of this project answered, but the kernel names no process for them (this command runs in another PID namespace, a sandbox, than the host), so nothing tells this terminal from an agent's", unnamed)
	}
	return approval.TellsApart(hosts)
}

func notAccepted(format string, args ...any) error {
	return &exitError{code: exitFailure, err: fmt.Errorf("not accepted: "+format, args...)}
}

// acceptHow says what a person does to accept at proof level need.
func acceptHow(need approval.Proofs) string {
	if need.Counts(approval.ProofTerminal) {
		return "a person runs " + selfcmd.Name() + " policy accept in their own terminal"
	}
	return "a person runs " + selfcmd.Name() + " policy accept --web (an enrolled WebAuthn authenticator) or --ssh KEY (an enrolled FIDO key) and touches it"
}

// signAccept has ssh-keygen sign d with key in PolicyNamespace (a touch
// of the key) and verifies the signature against the trust store, with
// user presence, recording its counter.
func signAccept(ctx context.Context, st *policyState, d grant.Digest, key string, stdio Stdio) (acceptProof, error) {
	tmp, err := os.MkdirTemp("", "mcpepoch-policy-")
	if err != nil {
		return acceptProof{}, err
	}
	defer os.RemoveAll(tmp)
	msg := filepath.Join(tmp, "change")
	if err := os.WriteFile(msg, d[:], 0o600); err != nil {
		return acceptProof{}, err
	}
	fmt.Fprintf(stdio.Err, "change code %s: touch your key to sign it\n", d.ShortCode())
	cmd := exec.CommandContext(ctx, "ssh-keygen", "-Y", "sign", "-n", trust.PolicyNamespace, "-f", key, msg)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdio.Err, stdio.Err
	if err := cmd.Run(); err != nil {
		return acceptProof{}, notAccepted("ssh-keygen -Y sign -f %s: %v", key, err)
	}
	sig, err := os.ReadFile(msg + ".sig")
	if err != nil {
		return acceptProof{}, err
	}
	p, err := sshsig.VerifyPresence(st.store, sig, d, trust.PolicyNamespace, false)
	if err != nil {
		return acceptProof{}, notAccepted("%v", err)
	}
	if err := acceptAttested(st, p.AuthenticatorID); err != nil {
		return acceptProof{}, err
	}
	if err := st.store.RecordUse(p.AuthenticatorID, p.SignCount); err != nil {
		return acceptProof{}, notAccepted("%v", err)
	}
	return acceptProof{Proven: approval.SSH(d.String(), string(sig), p.AuthenticatorID, p.SignCount)}, nil
}

// acceptAttested refuses the signature of authenticator id when the floor
// in force, the floor replaced, or mcpepoch.toml, has grants.attestation =
// "required" and id is not attested: under that rule an unattested key
// proves no presence, for accepting a change to the rule as for any
// approval. The strictest floor's own rule, in force only because the
// floor is missing, is waived for the project's sole root (soleRoot).
func acceptAttested(st *policyState, id string) error {
	required := st.cfg.Grants.Attestation == config.AttestationRequired || (st.from != nil && st.from.Attestation == config.AttestationRequired)
	if st.floor.Attestation == config.AttestationRequired && !soleRoot(st, id) {
		required = true
	}
	if !required {
		return nil
	}
	a, ok := st.store.Lookup(id)
	if !ok {
		return notAccepted("authenticator %s is not enrolled", id)
	}
	if v := a.Attestation(); !v.OK {
		return notAccepted("grants.attestation = %q counts only an attested authenticator as presence, and %s is %s", config.AttestationRequired, id, v)
	}
	return nil
}

// soleRoot reports whether, with the floor missing (st.floor is the
// strictest, whose attestation = "required" no earlier floor may have
// set), id is the one trust root the project's hosts ever pinned, or no
// root was pinned before: then the key that signs is the person's own,
// enrolled as a first enrollment at a terminal. A store replaced by
// another root shows a second root in the audit log, and its key must be
// attested.
func soleRoot(st *policyState, id string) bool {
	if st.floor.UpdatedBy != "" {
		return false
	}
	roots := st.priorLog().PinnedRoots()
	return len(roots) == 0 || (len(roots) == 1 && roots[0] == id)
}

// auditAccepted appends policy_accepted to the project's audit log: each
// weakening accepted, the digest and how the person was proven.
func auditAccepted(st *policyState, weak []trust.Difference, d grant.Digest, pr acceptProof) error {
	path := layout.Audit(st.root)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	opts := &audit.Options{}
	opts.CopyDir, _ = layout.ProjectState(st.root) // none: the head stays in the project only, as audit verify says
	l, err := audit.Open(path, opts)
	if err != nil {
		return err
	}
	defer l.Close()
	settings := make([]map[string]any, len(weak))
	for i, w := range weak {
		settings[i] = map[string]any{"setting": w.Setting, "floor": w.Floor, "file": w.File}
	}
	by := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil {
		by = u.Username
	}
	fields := map[string]any{
		"settings": settings, "file": config.FileName, "digest": d.String(), "proof": string(pr.Proof),
		"channel": pr.Channel, "accepted_by": by,
	}
	if pr.Authenticator != "" {
		fields["authenticator"], fields["sign_count"] = pr.Authenticator, strconv.FormatUint(uint64(pr.SignCount), 10)
		fields["signature"] = pr.Signature
	}
	if pr.Proof == approval.ProofSameUser {
		fields["unverified"] = "no person was proven: --yes"
	}
	_, err = l.Append(audit.Event{Type: audit.TypePolicyAccepted, Fields: fields})
	return err
}
