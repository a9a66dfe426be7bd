package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/tty"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// A renewal (localapi.Renewal) is offered before anything else, at the
// terminal by mcpepoch approve and by mcpepoch dev's prompt: one key
// approves it as prepared. Both send it through sendApproval with
// localapi.ChannelTerminal, and the host decides what that proves, as for
// any terminal approval.

// Keys of the renewal prompt.
const (
	keyApprove = 'y' // approve the renewal as prepared
	keyInclude = 'i' // name changed tools to include, then confirm
	keyReview  = 'r' // the whole review and the usual questions (mcpepoch approve)
	keyNo      = 'n' // approve nothing; Enter too, as at a [y/N] question
)

// printRenewal writes what the renewal r renews, what it leaves out and
// why, and its short code.
func printRenewal(w io.Writer, r *localapi.Renewal, sc screen) {
	code := r.ShortCode
	if code == "" {
		code = "-"
	}
	switch {
	case r.FromEpoch == r.Epoch:
		fmt.Fprintf(w, "%s %s: %s raised the approval policy on epoch %s: %s it no longer counts ended (proof now: %s)\n",
			sc.p.warn("renewal"), printable(code), config.FileName, printable(string(r.Epoch)), count(len(r.Revoked), "grant"), printable(approval.Proofs(r.Proof).String()))
	case r.PolicyRaised:
		fmt.Fprintf(w, "%s %s: epoch %s replaced epoch %s; %s ended, with it or when %s raised the approval policy (proof now: %s)\n",
			sc.p.warn("renewal"), printable(code), printable(string(r.Epoch)), printable(string(r.FromEpoch)), count(len(r.Revoked), "grant"), config.FileName, printable(approval.Proofs(r.Proof).String()))
	default:
		fmt.Fprintf(w, "%s %s: epoch %s replaced epoch %s, whose %s ended with it\n",
			sc.p.warn("renewal"), printable(code), printable(string(r.Epoch)), printable(string(r.FromEpoch)), count(len(r.Revoked), "grant"))
	}
	for _, t := range r.Tools {
		fmt.Fprintf(w, "  renew    %-24s definition unchanged\n", printable(t))
	}
	for _, c := range r.Changed {
		fmt.Fprintf(w, "  %s  %-24s not included: its definition changed\n", sc.p.warn("changed"), printable(c.Tool))
		for _, d := range c.Changes {
			fmt.Fprintf(w, "             %s\n", printable(d.Kind+": "+d.Detail))
		}
	}
	for _, c := range r.Added {
		fmt.Fprintf(w, "  %s    %-24s not included: new since the last approval\n", sc.p.warn("added"), printable(c.Tool))
	}
	for _, t := range r.Dropped {
		fmt.Fprintf(w, "  dropped  %-24s no longer offered\n", printable(t))
	}
	if len(r.Tools) > 0 {
		fmt.Fprintf(w, "  %s, until %s\n", scopePhrase(r.Credentials), printable(r.Expires))
	}
}

// renewalKeys is the prompt line of a renewal: the keys that mean
// something for r.
func renewalKeys(r *localapi.Renewal) string {
	var keys []string
	if len(r.Tools) > 0 {
		keys = append(keys, fmt.Sprintf("%c approve %s", keyApprove, printableList(r.Tools, ", ")))
	}
	if what := includable(r); what != "" {
		keys = append(keys, fmt.Sprintf("%c include %s", keyInclude, what))
	}
	return strings.Join(append(keys, fmt.Sprintf("%c review all", keyReview), fmt.Sprintf("%c or Enter: no", keyNo)), " · ") + ": "
}

// includable names what the include key of renewal r offers: "changed
// tools", "new tools", "changed or new tools", or "" when r has neither.
func includable(r *localapi.Renewal) string {
	switch {
	case len(r.Changed) > 0 && len(r.Added) > 0:
		return "changed or new tools"
	case len(r.Changed) > 0:
		return "changed tools"
	case len(r.Added) > 0:
		return "new tools"
	}
	return ""
}

// keyReader reads one key at a time from a person's terminal, and lines
// when a question needs one: the key and line questions of mcpepoch
// approve share in. Each read gives way to ctx: Ctrl-C, SIGTERM or SIGHUP
// (main's signal context) at a question ends it with errInterrupted, as
// the signals are caught for the whole process and would not end the
// read itself.
type keyReader struct {
	ctx context.Context
	in  *bufio.Reader
	f   *os.File // the terminal, put in cbreak mode for each key; nil: no mode change
}

func newKeyReader(ctx context.Context, in *bufio.Reader, r io.Reader) keyReader {
	f, _ := r.(*os.File)
	return keyReader{ctx: ctx, in: in, f: f}
}

// key returns the next key, lower-cased; the end of a line typed with it
// is consumed. The terminal's mode is restored before key returns, an
// interrupted read included.
func (k keyReader) key() (byte, error) {
	if k.f != nil {
		if restore, err := tty.Cbreak(k.f); err == nil {
			defer restore()
		}
	}
	b, err := readAnswer(k.ctx, func() (byte, error) {
		b, err := k.in.ReadByte()
		if err == nil && k.in.Buffered() > 0 {
			if next, _ := k.in.Peek(1); next[0] == '\n' || next[0] == '\r' {
				k.in.ReadByte()
			}
		}
		return b, err
	})
	if err != nil {
		return 0, err
	}
	if 'A' <= b && b <= 'Z' {
		b += 'a' - 'A'
	}
	return b, nil
}

// line returns the next line typed (what came before the end of input
// when there is no whole line), with its error, as bufio.Reader.ReadString.
func (k keyReader) line() (string, error) {
	return readAnswer(k.ctx, func() (string, error) { return k.in.ReadString('\n') })
}

// readAnswer runs read, a read of a person's answer, and returns what it
// returns, or errInterrupted as soon as ctx is done; read is then left to
// end with the process.
func readAnswer[T any](ctx context.Context, read func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	got := make(chan result, 1)
	go func() {
		v, err := read()
		got <- result{v, err}
	}()
	select {
	case r := <-got:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, errInterrupted
	}
}

// renewalAnswer is what a person answered to a renewal prompt.
type renewalAnswer int

const (
	renewalApproved renewalAnswer = iota // the request is set
	renewalReview                        // go on to the whole review
	renewalDeclined
)

// askRenewal offers renewal r with one key, and returns the approval a
// yes asks for (Channel terminal). w gets the prompt.
func askRenewal(k keyReader, w io.Writer, r *localapi.Renewal) (localapi.ApproveRequest, renewalAnswer, error) {
	for {
		fmt.Fprint(w, renewalKeys(r))
		b, err := k.key()
		if errors.Is(err, errInterrupted) {
			fmt.Fprintln(w)
			return localapi.ApproveRequest{}, renewalDeclined, err
		}
		if err != nil {
			fmt.Fprintln(w)
			return localapi.ApproveRequest{}, renewalDeclined, fmt.Errorf("reading the answer: %w", err)
		}
		fmt.Fprintf(w, "%c\n", b)
		switch {
		case b == keyApprove && len(r.Tools) > 0:
			return r.Request(nil, localapi.ChannelTerminal), renewalApproved, nil
		case b == keyInclude && includable(r) != "":
			req, ok, err := askInclude(k, w, r)
			if err != nil || ok {
				return req, renewalApproved, err
			}
		case b == keyReview:
			return localapi.ApproveRequest{}, renewalReview, nil
		case b == keyNo || b == '\n' || b == '\r' || b == 3 || b == 4: // n, Enter, Ctrl-C, Ctrl-D
			return localapi.ApproveRequest{}, renewalDeclined, nil
		}
	}
}

// askInclude asks which changed tools of r to include, then for a yes on
// the whole. The default, shown in brackets as at approve's other
// questions and taken by Enter or y, is every changed tool: the person
// pressed i to include them, and the yes that follows lists what the
// approval covers; n includes none and asks nothing more.
func askInclude(k keyReader, w io.Writer, r *localapi.Renewal) (localapi.ApproveRequest, bool, error) {
	changed := append(r.ChangedTools(), r.AddedTools()...)
	fmt.Fprintf(w, "%s to include (comma-separated) [%s]: ", includable(r), newPainter(w).warn(printableList(changed, ",")))
	line, err := k.line()
	if errors.Is(err, errInterrupted) {
		fmt.Fprintln(w)
		return localapi.ApproveRequest{}, false, err
	}
	if err != nil && line == "" {
		return localapi.ApproveRequest{}, false, fmt.Errorf("reading the answer: %w", err)
	}
	var include []string
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "", "y", "yes":
		line = strings.Join(changed, ",")
	case "n", "no":
		return localapi.ApproveRequest{}, false, nil
	}
	for _, t := range splitList(line) {
		if !slices.Contains(changed, t) {
			fmt.Fprintf(w, "%s is not among the %s of this renewal\n", printable(t), includable(r))
			return localapi.ApproveRequest{}, false, nil
		}
		include = append(include, t)
	}
	req := r.Request(include, localapi.ChannelTerminal)
	fmt.Fprintf(w, "approve tools %s with %s, until %s? [y/N] ", printableList(req.Tools, ", "), scopePhrase(req.Credentials), printable(req.Expires))
	b, err := k.key()
	if err != nil {
		fmt.Fprintln(w)
		return req, false, err
	}
	fmt.Fprintf(w, "%c\n", b)
	return req, b == 'y' && len(req.Tools) > 0, nil
}

// sendApproval sends req to the host at socket and returns the grant it
// made, or its refusal.
func sendApproval(ctx context.Context, socket string, req localapi.ApproveRequest) (grant.Grant, error) {
	payload, _ := json.Marshal(req)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := notify.Send(cctx, socket, notify.Request{Type: localapi.TypeApprove, Payload: payload})
	if err != nil {
		return grant.Grant{}, err
	}
	return localapi.DecodePayload[grant.Grant](resp.Payload)
}

// approvedLine is what a command prints for grant g.
func approvedLine(g grant.Grant) string {
	return fmt.Sprintf("approved: grant %s for agent run %s, epoch %s: tools %s, %s, until %s, proof %s",
		printable(string(g.ID)), printable(string(g.AgentRun)), printable(string(g.ExecutionEpoch)), printableList(g.ToolScope, ", "),
		scopePhrase(g.CredentialScope), printable(g.ExpiresWhen), printable(string(g.Proof)))
}

// waitingOutside lists the tools of rv's pending calls in its current
// epoch that renewal r does not renew, each once.
func waitingOutside(rv localapi.Review, r *localapi.Renewal) []string {
	var out []string
	for _, p := range rv.Pending {
		if p.Epoch == rv.Epoch && !slices.Contains(r.Tools, p.Tool) && !slices.Contains(out, p.Tool) {
			out = append(out, p.Tool)
		}
	}
	return out
}
