package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/internal/tty"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// devPrompt is mcpepoch dev's approval prompt. After a build whose
// restart ended grants, dev asks the host for its review; a renewal there
// is shown, and, when dev runs in a person's terminal and the terminal
// counts as proof for it, one key approves it: the same approval request
// mcpepoch approve sends (sendApproval, channel terminal), so the host's
// checks of the approving process apply to dev as to approve. Without a
// terminal, or where the project wants more than a terminal, dev says where
// to approve instead, and takes no key.
type devPrompt struct {
	out   *devOutput
	keys  bool // dev reads keys from a terminal
	mu    sync.Mutex
	queue []devOffer // renewals offered, the first one asked
}

// devOffer is a renewal offered by the host at socket.
type devOffer struct {
	socket string
	run    string
	r      localapi.Renewal
}

// newDevPrompt starts reading keys when in is a terminal and dev prints
// for a person (not --json); the returned stop restores the terminal.
func newDevPrompt(ctx context.Context, stdio Stdio, out *devOutput) (*devPrompt, func()) {
	p := &devPrompt{out: out}
	f, ok := stdio.In.(*os.File)
	if !ok || out.f.json || !isTerminal(stdio.In) {
		return p, func() {}
	}
	restore, err := tty.Cbreak(f)
	if err != nil {
		out.line("note", "the terminal takes no single keys ("+err.Error()+"): approve renewals with "+selfcmd.Name()+" approve")
		return p, func() {}
	}
	p.keys = true
	go p.read(ctx, f)
	go p.watch(ctx)
	return p, restore
}

// renewalRecheck is how often dev asks the hosts of the renewals it asks
// a key for whether they still offer them.
const renewalRecheck = 2 * time.Second

// watch withdraws, every renewalRecheck while renewals are queued, those
// their host no longer offers: approved elsewhere (mcpepoch approve in
// another terminal, the approval page, the MCP client) or replaced by a
// newer one, which it offers in their place. So no key is asked for a
// renewal that is gone. A host that does not answer keeps its renewal
// queued: a key's answer then says what happened.
func (p *devPrompt) watch(ctx context.Context) {
	t := time.NewTicker(renewalRecheck)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		queued := slices.Clone(p.queue)
		p.mu.Unlock()
		for _, o := range queued {
			cur, err := offeredRenewal(ctx, o.socket)
			if err == nil && (cur == nil || cur.ID != o.r.ID) {
				p.withdraw(o, cur)
			}
		}
	}
}

// offeredRenewal asks the host at socket for its review and returns the
// renewal it offers, nil when none.
func offeredRenewal(ctx context.Context, socket string) (*localapi.Renewal, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := notify.Send(cctx, socket, notify.Request{Type: localapi.TypeReview})
	if err != nil {
		return nil, err
	}
	rv, err := localapi.DecodePayload[localapi.Review](resp.Payload)
	if err != nil {
		return nil, err
	}
	return rv.Renewal, nil
}

// withdraw takes o off the queue, says so, and asks what is asked now:
// cur, the renewal o's host offers instead, when there is one, else the
// next queued. Nothing when o was answered meanwhile.
func (p *devPrompt) withdraw(o devOffer, cur *localapi.Renewal) {
	p.mu.Lock()
	i := slices.IndexFunc(p.queue, func(q devOffer) bool { return q.run == o.run && q.r.ID == o.r.ID })
	if i < 0 {
		p.mu.Unlock()
		return
	}
	p.queue = slices.Delete(p.queue, i, i+1)
	var next *devOffer
	if i == 0 && len(p.queue) > 0 {
		next = &p.queue[0]
	}
	p.mu.Unlock()
	if cur != nil {
		p.out.line("renewal", fmt.Sprintf("renewal %s of agent run %s is no longer offered: replaced by renewal %s", printable(o.r.ShortCode), printable(o.run), printable(cur.ShortCode)))
		p.offer(devOffer{socket: o.socket, run: o.run, r: *cur})
		return
	}
	p.out.line("renewal", p.out.p.ok(fmt.Sprintf("renewal %s of agent run %s is no longer offered (approved elsewhere, or the run ended): nothing to press for it", printable(o.r.ShortCode), printable(o.run))))
	if next != nil {
		p.ask(*next)
	}
}

// read hands each key to answer until ctx ends or the terminal closes.
func (p *devPrompt) read(ctx context.Context, f *os.File) {
	b := make([]byte, 1)
	for ctx.Err() == nil {
		if n, err := f.Read(b); err != nil {
			return
		} else if n == 1 {
			p.answer(ctx, b[0])
		}
	}
}

// afterBuild looks, for each host whose restart ended grants, for the
// renewal it prepared, and offers it.
func (p *devPrompt) afterBuild(ctx context.Context, results []notify.Result) {
	for _, res := range results {
		if res.Err != nil || res.Response.GrantsRevoked == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		resp, err := notify.Send(cctx, res.Socket, notify.Request{Type: localapi.TypeReview})
		cancel()
		if err != nil {
			p.out.line("renewal", p.out.p.warn(fmt.Sprintf("agent run %s: no review: %v", printable(res.Response.Run), err)))
			continue
		}
		rv, err := localapi.DecodePayload[localapi.Review](resp.Payload)
		if err != nil || rv.Renewal == nil {
			continue
		}
		p.offer(devOffer{socket: res.Socket, run: string(rv.AgentRun), r: *rv.Renewal})
	}
}

// offer shows a renewal and, when a key can approve it, queues it; a
// newer renewal of the same agent run replaces an older one.
func (p *devPrompt) offer(o devOffer) {
	var b strings.Builder
	printRenewal(&b, &o.r, screen{p: p.out.p})
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		p.out.line("renewal", l)
	}
	switch {
	case len(o.r.Tools) == 0:
		if what := includable(&o.r); what != "" {
			p.out.line("renewal", "nothing to renew as it was: review the "+what+" with "+selfcmd.Cmd("approve"))
		} else {
			p.out.line("renewal", "nothing of it to renew")
		}
		return
	case !p.keys:
		p.out.line("renewal", fmt.Sprintf("agent run %s: %s (renewal %s)", printable(o.run), printable(o.r.Action), printable(o.r.ShortCode)))
		return
	case !o.r.Counts(approval.ProofTerminal):
		p.out.line("renewal", fmt.Sprintf("a key here does not count for this renewal (proof %s): %s", printable(approval.Proofs(o.r.Proof).String()), printable(o.r.Action)))
		return
	}
	p.mu.Lock()
	for i, q := range p.queue {
		if q.run == o.run {
			p.queue = append(p.queue[:i], p.queue[i+1:]...)
			break
		}
	}
	p.queue = append(p.queue, o)
	first := p.queue[0]
	p.mu.Unlock()
	p.ask(first)
}

// notIncluded names the tools of r that its one key does not approve:
// "alpha (new), beta (changed)"; "" when there are none.
func notIncluded(r *localapi.Renewal) string {
	var out []string
	for _, c := range r.Added {
		out = append(out, printable(c.Tool)+" (new)")
	}
	for _, c := range r.Changed {
		out = append(out, printable(c.Tool)+" (changed)")
	}
	return strings.Join(out, ", ")
}

// ask prints the keys of the renewal asked now.
func (p *devPrompt) ask(o devOffer) {
	s := fmt.Sprintf("renewal %s of agent run %s: %c approve %s · %c not now", printable(o.r.ShortCode), printable(o.run),
		keyApprove, printableList(o.r.Tools, ", "), keyNo)
	if left := notIncluded(&o.r); left != "" {
		s += " (not included: " + left + "; " + selfcmd.Cmd("approve") + " includes them)"
	}
	p.out.line("renewal", p.out.p.warn(s))
}

// answer acts on one key: y approves the renewal asked now, n sets it
// aside; other keys mean nothing.
func (p *devPrompt) answer(ctx context.Context, key byte) {
	if 'A' <= key && key <= 'Z' {
		key += 'a' - 'A'
	}
	p.mu.Lock()
	if len(p.queue) == 0 || key != keyApprove && key != keyNo {
		p.mu.Unlock()
		return
	}
	o := p.queue[0]
	p.queue = p.queue[1:]
	var next *devOffer
	if len(p.queue) > 0 {
		next = &p.queue[0]
	}
	p.mu.Unlock()
	if key == keyNo {
		p.out.line("renewal", fmt.Sprintf("renewal %s not approved: "+selfcmd.Name()+" approve offers it while it is current", printable(o.r.ShortCode)))
	} else if g, err := sendApproval(ctx, o.socket, o.r.Request(nil, localapi.ChannelTerminal)); err != nil {
		p.out.line("renewal", p.out.p.bad(fmt.Sprintf("agent run %s: renewal %s: %v", printable(o.run), printable(o.r.ShortCode), printable(err.Error()))))
	} else {
		p.out.line("renewal", p.out.p.ok(approvedLine(g)))
	}
	if next != nil {
		p.ask(*next)
	}
}
