package host

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/credwire"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
)

// Credentials delivered in the environment (deliver = "env", as = "VAR"),
// for servers that can only read a variable.
//
// The host computes the identity and mints the epoch before it launches a
// server (restart). A server process gets VAR only when, at its launch, a
// live grant of its epoch names the scope: so the first process of an
// epoch never has it (no person can have approved an epoch that has not
// run), whatever the host's own environment holds (a VAR the host
// inherited is never passed on). When a person approves the running epoch
// for such a scope, the host starts the server again under the same epoch
// and identity (restartCredential), this time with VAR: requests in flight
// are answered server_restarted and not retried, calls waiting for that
// approval go to the new process, and the audit log records the
// replacement (server_replaced, same epoch) and the hand-over
// (credential_issued, delivery env). If the identity changed since the
// approval, nothing is started again: the next build signal brings a new
// epoch, which needs its own approval. A rebuild, a crash or mcpepoch
// restart starts a new epoch, whose server again starts without VAR until a
// person approves it.
//
// A variable, once given, stays in that process until it exits: revoking
// the grant, or its expiry, does not take it back (the next epoch does not
// get it). And any process of the same user can read another's environment
// (/proc/PID/environ on Linux, ps eww on macOS), which is why broker, where
// the secret exists only during a call, is the default.

// envScopesLocked returns the deliver = "env" scopes, sorted.
func (h *Host) envScopesLocked() []string {
	var out []string
	for name, c := range h.opts.Credentials {
		if c.Delivery() == config.DeliverEnv {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// envGrantLocked returns a live grant of ep that names scope, or nil.
func (h *Host) envGrantLocked(ep epoch.Epoch, scope string, now time.Time) *grant.Grant {
	for _, g := range h.grants.Live(now) {
		if g.ExecutionEpoch == ep && slices.Contains(g.CredentialScope, scope) {
			return g
		}
	}
	return nil
}

// envDelivery returns env, the environment of a new server process of
// epoch ep, without the variable of any deliver = "env" scope and with
// the variable of each such scope a live grant of ep names, read from its
// source now; and the scopes it was given. A source that cannot be read is
// logged and audited (credential_denied, never a value), and the process
// starts without it.
func (h *Host) envDelivery(ep epoch.Epoch, env []string) ([]string, []string) {
	h.mu.Lock()
	scopes := h.envScopesLocked()
	grants := map[string]*grant.Grant{}
	for _, s := range scopes {
		if g := h.envGrantLocked(ep, s, time.Now()); g != nil {
			grants[s] = g
		}
	}
	h.mu.Unlock()
	if len(scopes) == 0 || h.creds == nil {
		return env, nil // without sources, openCredentials said why
	}
	env = slices.DeleteFunc(env, func(kv string) bool {
		for _, s := range scopes {
			if strings.HasPrefix(kv, h.opts.Credentials[s].As+"=") {
				return true
			}
		}
		return false
	})
	var given []string
	for _, s := range scopes {
		g := grants[s]
		if g == nil {
			continue
		}
		as := h.opts.Credentials[s].As
		fields := map[string]any{"scope": s, "delivery": config.DeliverEnv, "as": as, "grant": g.ID}
		v, err := h.creds.Source(s).Read(context.Background())
		if err != nil {
			fields["reason"] = credwire.CodeSourceFailed
			h.audit.event(audit.TypeCredentialDenied, ep, h.run, fields)
			h.logf("epoch %s: %v: the server starts without %s", ep, err, as)
			continue
		}
		h.audit.event(audit.TypeCredentialIssued, ep, h.run, fields)
		env = append(env, as+"="+v)
		given = append(given, s)
	}
	return env, given
}

// envRelaunchDueLocked reports whether grant g, just made, names a
// deliver = "env" scope the running process did not start with: then the
// host starts it again with the variable (relaunchWithEnv).
func (h *Host) envRelaunchDueLocked(g *grant.Grant) bool {
	if h.child == nil || g.ExecutionEpoch != h.child.epoch {
		return false
	}
	for _, s := range g.CredentialScope {
		if h.opts.Credentials[s].Delivery() == config.DeliverEnv && !slices.Contains(h.child.envScopes, s) {
			return true
		}
	}
	return false
}

// relaunchWithEnv starts the server of the running epoch again, same
// epoch and identity, so that it gets the variables grant g approved; then
// the calls that waited for the approval go to the new process.
func (h *Host) relaunchWithEnv(g *grant.Grant) {
	why := "grant " + string(g.ID) + " approved credential scope " + strings.Join(g.CredentialScope, ", ") + " (deliver = \"env\")"
	if _, err := h.restart(h.ctx, why, restartCredential); err != nil && h.ctx.Err() == nil {
		h.logf("epoch %s: could not start the server again with the approved credential: %v", g.ExecutionEpoch, err)
	}
	h.mu.Lock()
	h.releaseHeldLocked()
	h.mu.Unlock()
}
