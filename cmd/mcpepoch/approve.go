package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// runApprove is the out-of-band approval: a person at a terminal reviews
// what a host runs and what changed since their last approval, then grants
// tools (and the credential scopes they use) to one agent run for the
// running execution epoch only.
func runApprove(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("approve", stdio.Err, "[--run R] [--tools T,...|--all] [--credential C]... [--expires E] [--yes]")
	dirFlag := fs.String("dir", ".", "a directory of the project: its root is the nearest of it and its parents with mcpepoch.toml or .mcpepoch/")
	run := fs.String("run", "", "agent run to approve for (a prefix is enough); required with --yes when several hosts serve the project")
	tools := fs.String("tools", "", "comma-separated tools to approve (default: the renewal the host prepared, else the pending requests)")
	all := fs.Bool("all", false, "approve every tool of the current catalog, with the credential scopes they use")
	var creds stringList
	fs.Var(&creds, "credential", "credential scope to include (repeatable; default in interactive mode: the scopes the tools use)")
	expires := fs.String("expires", grant.ExpiresRunEnds, "agent-run-ends, per-call, or a duration such as 30m")
	web := fs.Bool("web", false, "approve on a local page with an enrolled authenticator (proof presence): prints one URL per host and waits until each is decided")
	noOpen := fs.Bool("no-open", false, "with --web: print the URLs, open no browser")
	sshKey := fs.String("ssh", "", "approve with an enrolled OpenSSH FIDO key (proof presence): ssh-keygen -Y sign -f KEY signs the grant digest")
	full := fs.Bool("full", false, "show digests whole on the review screen (default: the first 12 hex digits)")
	renew := fs.Bool("renewal", false, "approve the renewal the host prepared after its last epoch change or policy raise, as prepared (without asking only with --yes)")
	yes := fs.Bool("yes", false, "approve without asking, for scripts and tests; needs --tools or --all, and counts only where mcpepoch.toml's [grants] proof names same-user")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := grant.ParseExpiry(*expires); err != nil {
		return usageError("--expires: %v", err)
	}
	if *yes && *tools == "" && !*all && !*renew {
		return usageError("--yes needs --tools, --all or --renewal: say exactly what is approved")
	}
	if *renew && (*tools != "" || *all) {
		return usageError("--renewal approves what the renewal names: it excludes --tools and --all")
	}
	if (*web && *yes) || (*sshKey != "" && (*yes || *web)) {
		return usageError("--web, --ssh and --yes exclude each other")
	}
	interactive := !*yes && !*web && *sshKey == ""
	if interactive && !isTerminal(stdio.In) {
		return &exitError{code: exitUsage, err: errors.New("approve asks a person at a terminal, and standard input is not one"),
			hints: []string{"a person runs " + selfcmd.Name() + " approve in their own terminal"}}
	}
	root, err := findRoot(*dirFlag)
	if err != nil {
		return err
	}
	results := askHosts(ctx, root, 10*time.Second, notify.Request{Type: localapi.TypeReview})
	reviews, sockets, err := runReviews(ctx, stdio.Err, root, *run, results)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		fmt.Fprintln(stdio.Err, noHostLine(root, ": nothing to approve"))
		return silentExit(exitNoHost)
	}
	if len(reviews) == 0 {
		return usageError("no host serves agent run %q", *run)
	}
	orderReviews(reviews)
	if len(reviews) > 1 && *yes {
		var runs []string
		for _, r := range reviews {
			runs = append(runs, string(r.AgentRun))
		}
		return usageError("%d agent runs serve this project (%s): pick one with --run", len(reviews), printableList(runs, ", "))
	}
	base := func(rv localapi.Review) localapi.ApproveRequest {
		req := localapi.ApproveRequest{Epoch: rv.Epoch, Catalog: rv.CatalogRevision, All: *all, Credentials: creds, Expires: *expires}
		if *tools != "" {
			req.Tools = splitList(*tools)
		}
		if *renew {
			req.Renewal = "prepared" // settleRequest takes the review's renewal
		}
		return req
	}
	if *web {
		return approveWeb(ctx, reviews, sockets, base, *noOpen, stdio)
	}
	if *sshKey != "" {
		return approveSSH(ctx, *sshKey, reviews, sockets, base, stdio)
	}
	return approveAsked(ctx, reviews, sockets, base, interactive, screen{p: newPainter(stdio.Out), full: *full}, stdio)
}

// approveAsked is the terminal's approval (interactive: the person answers
// for each host) and --yes's: one approve request per review, each
// printing its grant on stdout. It ends approve's exit status: 0 when it
// made a grant, or when nothing was waiting to approve (--renewal, and no
// host prepared one); 1 when it made none though something was asked (the
// person declined every question: n, Enter, no tools), and at once when a
// signal ends a question (errInterrupted); 4 when a host refused or failed.
func approveAsked(ctx context.Context, reviews []localapi.Review, sockets map[epoch.RunID]string, base func(localapi.Review) localapi.ApproveRequest, interactive bool, sc screen, stdio Stdio) error {
	if interactive {
		if err := refuseUncountable(reviews, approval.ProofTerminal, "an approval at a terminal"); err != nil {
			return err
		}
	}
	keys := newKeyReader(ctx, bufio.NewReader(stdio.In), stdio.In)
	approvedAny, declined := false, false
	for _, rv := range reviews {
		if interactive || mayCount(rv, approval.ProofSameUser) {
			// Without asking, the host's refusal is all there is to
			// read when the approval cannot count: no screen before it.
			printReview(stdio.Out, rv, sc)
		}
		// Catalog names the revision on the screen: the host refuses the
		// approval if the server changed its catalog since.
		req := base(rv)
		req.Channel = localapi.ChannelScript
		if interactive {
			req.Channel = localapi.ChannelTerminal // the host checks who asked
		}
		waiting := req.Renewal == "" || rv.Renewal != nil && len(rv.Renewal.Tools) > 0
		ok, err := settleRequest(keys, stdio, rv, &req, interactive, sc)
		if errors.Is(err, errInterrupted) {
			return &exitError{code: exitFailure, err: fmt.Errorf("agent run %s: %w: nothing more approved", printable(string(rv.AgentRun)), err)}
		}
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(stdio.Out, "agent run %s: nothing approved\n", printable(string(rv.AgentRun)))
			declined = declined || waiting
			continue
		}
		g, err := sendApproval(ctx, sockets[rv.AgentRun], req)
		if err != nil {
			return &exitError{code: exitHostError, err: fmt.Errorf("agent run %s: %w", rv.AgentRun, err)}
		}
		approvedAny = true
		fmt.Fprintln(stdio.Out, approvedLine(g))
		if req.All && g.ExpiresWhen != grant.ExpiresPerCall {
			if pc := rv.PerCallTools(g.ToolScope); len(pc) > 0 {
				// The host gives --all the scopes the tools use, but a
				// per-call scope is covered only by per-call grants.
				fmt.Fprintf(stdio.Out, "note: this grant does not cover calls of %s: credential scope %s needs an approval for each call ("+selfcmd.Name()+" approve --run %s --tools TOOL --expires per-call)\n",
					printableList(pc, ", "), orDash(rv.PerCallScopes(pc)), printable(string(g.AgentRun)))
			}
		}
	}
	if !approvedAny && declined {
		return silentExit(exitFailure)
	}
	return nil
}

// settleRequest settles what req approves for review rv: the renewal when
// the host prepared one and the person said yes to it (or --renewal), else
// the person's answers to askApproval; false when nothing is approved.
func settleRequest(keys keyReader, stdio Stdio, rv localapi.Review, req *localapi.ApproveRequest, interactive bool, sc screen) (bool, error) {
	r := rv.Renewal
	if req.Renewal != "" { // --renewal
		if r == nil || len(r.Tools) == 0 {
			fmt.Fprintf(stdio.Err, "agent run %s: no renewal to approve\n", printable(string(rv.AgentRun)))
			return false, nil
		}
		*req = r.Request(nil, req.Channel)
		return true, nil
	}
	if !interactive {
		return true, nil
	}
	if r != nil && len(r.Tools) == 0 && len(r.Changed) == 0 && len(r.Added) == 0 && len(req.Tools) == 0 && !req.All {
		// A renewal with nothing in it (its tools exempt now, or gone)
		// offers no key: say so and go on to the review.
		fmt.Fprintf(stdio.Out, "epoch %s replaced epoch %s, whose %s ended with it: nothing of it to renew\n",
			printable(string(r.Epoch)), printable(string(r.FromEpoch)), count(len(r.Revoked), "grant"))
		r = nil
	}
	if r != nil && len(req.Tools) == 0 && !req.All {
		printRenewal(stdio.Out, r, sc)
		if w := waitingOutside(rv, r); len(w) > 0 {
			fmt.Fprintf(stdio.Out, "  waiting  %s: calls held or refused, not in the renewal (%c reviews them)\n", printableList(w, ", "), keyReview)
		}
		rreq, answer, err := askRenewal(keys, stdio.Err, r)
		switch {
		case err != nil:
			return false, err
		case answer == renewalApproved:
			*req = rreq
			return true, nil
		case answer == renewalDeclined:
			return false, nil
		}
	}
	return askApproval(keys, stdio.Err, rv, req)
}

// askApproval settles the tools and credential scopes with the person and
// asks for a yes.
func askApproval(keys keyReader, w io.Writer, rv localapi.Review, req *localapi.ApproveRequest) (bool, error) {
	if !req.All && len(req.Tools) == 0 {
		for _, p := range rv.Pending {
			if p.Epoch == rv.Epoch && !slices.Contains(req.Tools, p.Tool) {
				req.Tools = append(req.Tools, p.Tool)
			}
		}
		dflt := slices.Clone(req.Tools) // what Enter or y takes, at every asking
		def := newPainter(w).warn(printableList(dflt, ","))
		names := catalogNames(rv)
		for {
			fmt.Fprintf(w, "tools to approve (comma-separated, or all) [%s]: ", def)
			line, err := keys.line()
			if errors.Is(err, errInterrupted) {
				fmt.Fprintln(w)
				return false, err
			}
			if err != nil && line == "" {
				return false, fmt.Errorf("reading the answer: %w", err)
			}
			switch line = strings.TrimSpace(line); strings.ToLower(line) {
			case "", "y", "yes":
				req.Tools = slices.Clone(dflt)
			case "all":
				req.All, req.Tools = true, nil
			case "n", "no":
				return false, nil
			default:
				req.Tools = splitList(line)
			}
			var unknown []string
			for _, t := range req.Tools {
				if !slices.Contains(names, t) {
					unknown = append(unknown, t)
				}
			}
			if len(unknown) == 0 {
				break
			}
			fmt.Fprintf(w, "not in the current catalog: %s (it has: %s)\n", printableList(unknown, ", "), printableList(names, ", "))
			req.Tools = nil
		}
		if !req.All && len(req.Tools) == 0 {
			return false, nil
		}
	}
	tools := req.Tools
	if req.All {
		tools = rv.Granted()
	}
	if len(req.Credentials) == 0 {
		req.Credentials = rv.Scopes(tools)
	}
	fmt.Fprintf(w, "approve tools %s with %s for agent run %s, epoch %s, until %s? [y/N] ",
		printableList(tools, ", "), scopePhrase(req.Credentials), printable(string(rv.AgentRun)), printable(string(rv.Epoch)), printable(req.Expires))
	line, err := keys.line()
	if errors.Is(err, errInterrupted) {
		fmt.Fprintln(w)
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// printReview writes the review screen: who, which code, what changed
// since the last approval, the catalog with its hints, pending requests.
// Everything the server chose (names, annotations) and everything the host
// reports goes through printable. Digests are cut to 12 hex digits unless
// sc.full; what changed since the last approval (CHANGED, NEW, new tools,
// changed defaults) is coloured when sc.p is on.
func printReview(w io.Writer, rv localapi.Review, sc screen) {
	fmt.Fprintf(w, "agent run %s · server %s · epoch %s (pid %d) · %s\n",
		printable(string(rv.AgentRun)), printable(rv.Label), printable(string(rv.Epoch)), rv.PID, printable(string(rv.State)))
	if rv.ApprovedEpoch == "" {
		fmt.Fprintln(w, "identity (no earlier approval in this run):")
	} else {
		fmt.Fprintf(w, "identity (compared with the last approved epoch %s):\n", printable(string(rv.ApprovedEpoch)))
	}
	for _, l := range rv.Identity {
		mark := ""
		switch {
		case rv.ApprovedEpoch == "":
		case l.Changed && l.Approved == "":
			mark = "  " + sc.p.warn("NEW")
		case l.Changed:
			mark = "  " + sc.p.warn("CHANGED") + " (was " + sc.digest(string(l.Approved)) + ")"
		default:
			mark = "  " + sc.p.ok("unchanged")
		}
		d := sc.digest(string(l.Digest))
		if l.Missing {
			d = "(absent)" // as mcpepoch identity says it
		}
		fmt.Fprintf(w, "  %-9s %-28s %s%s\n", printable(string(l.Role)), printable(l.Path), d, mark)
	}
	fmt.Fprintf(w, "catalog %s (%s)\n", sc.digest(orNone(string(rv.CatalogRevision))), count(len(rv.Tools), "tool"))
	if rv.ApprovedEpoch != "" {
		if len(rv.CatalogChanges) == 0 {
			fmt.Fprintln(w, "  no change since the last approval")
		} else {
			fmt.Fprintln(w, "  changes since the last approval:")
			for _, c := range rv.CatalogChanges {
				line := printable(fmt.Sprint(c))
				switch c.Kind {
				case "tool_added", "default_changed":
					line = sc.p.warn(line)
				}
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
	}
	for _, t := range rv.Tools {
		var d struct {
			Name        string          `json:"name"`
			Annotations json.RawMessage `json:"annotations"`
		}
		json.Unmarshal(t, &d)
		cred := "none"
		if slices.Contains(rv.Exempt, d.Name) {
			cred = "exempt: needs no grant"
		} else if c := rv.Credentials[d.Name]; len(c) > 0 {
			cred = printableList(c, ", ")
			if len(rv.PerCallScopes([]string{d.Name})) > 0 {
				cred += " (approval per call)"
			}
		}
		ann := ""
		if len(d.Annotations) > 0 && string(d.Annotations) != "null" {
			ann = "  hints " + printable(string(d.Annotations))
		}
		fmt.Fprintf(w, "  %-24s credential: %s%s\n", printable(d.Name), cred, ann)
	}
	fmt.Fprintln(w, "  (annotations are the server's own claims: shown, never used to decide access)")
	if len(rv.Pending) > 0 {
		fmt.Fprintln(w, "pending requests:")
		for _, p := range rv.Pending {
			fmt.Fprintf(w, "  %-24s %s, epoch %s, %d call(s), last %s\n",
				printable(p.Tool), printable(p.Reason), printable(string(p.Epoch)), p.Count, p.At.Local().Format(time.TimeOnly))
		}
	}
	live := 0
	for _, g := range rv.Grants {
		if g.Live(time.Now()) {
			live++
		}
	}
	fmt.Fprintf(w, "live grants: %d\n", live)
}

// orderReviews puts the hosts a person most likely came for first: those
// with calls waiting for an approval (pending requests of the current
// epoch), then the others, and last those that offer only a renewal
// (nothing pending), older renewals after newer ones. The order is
// otherwise the hosts' own.
func orderReviews(reviews []localapi.Review) {
	rank := func(rv localapi.Review) int {
		for _, p := range rv.Pending {
			if p.Epoch == rv.Epoch {
				return 0
			}
		}
		if rv.Renewal != nil {
			return 2
		}
		return 1
	}
	slices.SortStableFunc(reviews, func(a, b localapi.Review) int {
		if c := cmp.Compare(rank(a), rank(b)); c != 0 || rank(a) != 2 {
			return c
		}
		return -strings.Compare(string(a.Renewal.Epoch), string(b.Renewal.Epoch)) // ULIDs: a later epoch sorts after
	})
}

// runReviews returns the whole review of each host in results whose agent
// run starts with run, and the socket each came from. When no host gave a
// review and one failed to (said on errw), the error exits 4.
func runReviews(ctx context.Context, errw io.Writer, root, run string, results []notify.Result) ([]localapi.Review, map[epoch.RunID]string, error) {
	got, from, failed := payloads[localapi.Review](errw, root, "review", results)
	var reviews []localapi.Review
	sockets := map[epoch.RunID]string{} // agent run → the socket its review came from
	for i, rv := range got {
		if strings.HasPrefix(string(rv.AgentRun), run) {
			rv = awaitCatalog(ctx, errw, from[i].Socket, rv)
			full, err := completeReview(ctx, from[i].Socket, rv)
			if err != nil {
				return nil, nil, &exitError{code: exitHostError, err: fmt.Errorf("agent run %s: review: %w", rv.AgentRun, err)}
			}
			reviews = append(reviews, full)
			sockets[rv.AgentRun] = from[i].Socket
		}
	}
	if len(reviews) == 0 && failed > 0 {
		// Each failure is on errw already.
		return nil, nil, &exitError{code: exitHostError, err: errors.New("no host answered with a review: nothing to approve")}
	}
	return reviews, sockets, nil
}

// catalogWait bounds how long approve waits for a host to learn its
// server's first catalog, which it fetches after the server's first
// launch check (a re-hash of what runs).
const catalogWait = 15 * time.Second

// awaitCatalog returns rv, or, while the host at socket is fetching the
// first catalog (rv.CatalogPending), the first review that has it, asking
// again every 100 ms for up to catalogWait; the last review it got when
// the wait ends or a request fails (the approval then says the catalog is
// not known). It says once on errw that it waits.
func awaitCatalog(ctx context.Context, errw io.Writer, socket string, rv localapi.Review) localapi.Review {
	if !rv.CatalogPending {
		return rv
	}
	fmt.Fprintf(errw, "agent run %s: waiting for the server's tool catalog, which the host is listing\n", printable(string(rv.AgentRun)))
	deadline := time.Now().Add(catalogWait)
	for rv.CatalogPending && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return rv
		case <-time.After(100 * time.Millisecond):
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := notify.Send(cctx, socket, notify.Request{Type: localapi.TypeReview})
		cancel()
		if err != nil {
			return rv
		}
		next, err := localapi.DecodePayload[localapi.Review](resp.Payload)
		if err != nil {
			return rv
		}
		rv = next
	}
	return rv
}

// completeReview asks the host at socket for the pages of review rv after
// its first: a large catalog comes in pages that each fit the socket's
// line limit. Every page must be of the same epoch and catalog revision,
// or the review is not one thing the person saw.
func completeReview(ctx context.Context, socket string, rv localapi.Review) (localapi.Review, error) {
	for page := rv; page.More(); {
		payload, _ := json.Marshal(localapi.ReviewRequest{ToolsFrom: len(rv.Tools), ChangesFrom: len(rv.CatalogChanges)})
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := notify.Send(cctx, socket, notify.Request{Type: localapi.TypeReview, Payload: payload})
		cancel()
		if err != nil {
			return rv, err
		}
		if page, err = localapi.DecodePayload[localapi.Review](resp.Payload); err != nil {
			return rv, fmt.Errorf("unreadable page: %v", err)
		}
		if page.Epoch != rv.Epoch || page.CatalogRevision != rv.CatalogRevision {
			return rv, errors.New("the epoch or the catalog changed while the review was read: run " + selfcmd.Name() + " approve again")
		}
		if page.NextTools > 0 && page.NextTools <= page.ToolsFrom || page.NextChanges > 0 && page.NextChanges <= page.ChangesFrom {
			return rv, errors.New("a review page that does not advance")
		}
		if page.ToolsFrom == len(rv.Tools) {
			rv.Tools = append(rv.Tools, page.Tools...)
		}
		if page.ChangesFrom == len(rv.CatalogChanges) {
			rv.CatalogChanges = append(rv.CatalogChanges, page.CatalogChanges...)
		}
	}
	rv.NextTools, rv.NextChanges = 0, 0
	return rv, nil
}

// catalogNames returns the names of the review's tools.
func catalogNames(rv localapi.Review) []string {
	var out []string
	for _, t := range rv.Tools {
		var d struct {
			Name string `json:"name"`
		}
		json.Unmarshal(t, &d)
		out = append(out, d.Name)
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// scopePhrase names credential scopes in a sentence: "credential scope
// a, b", or "no credential scope".
func scopePhrase(l []string) string {
	if len(l) == 0 {
		return "no credential scope"
	}
	return "credential scope " + printableList(l, ", ")
}

// orDash returns the printable elements of l joined by ", ", or "-".
func orDash(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return printableList(l, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(not known yet)"
	}
	return s
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
