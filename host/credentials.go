package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/credbroker"
	"github.com/mcpepoch/mcpepoch/credsource"
	"github.com/mcpepoch/mcpepoch/credwire"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/childproc"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/proctree"
	"github.com/mcpepoch/mcpepoch/notify"
)

// Credentials: the host hands a scope's secret to the server only for a
// call a person approved, on the epoch they approved (seed: a stale grant
// is rejected before credentials are handed over).
//
// Each epoch gets its own broker socket (package credbroker) when the
// project declares a credential scope; the child's environment carries its
// path (credwire.EnvSocket) and none of the host's env sources. Each
// tools/call forwarded to it carries a random token of that call in its
// params._meta (credwire.MetaKey, bindCallLocked), which the server's
// credentials client presents. A request gets the secret only when, in this
// order: the peer is the epoch's server process or a descendant, the token
// is that of a tools/call of the epoch in flight, the scope is declared for
// broker delivery, that call's tool uses the scope under a grant that names
// it, that grant is still live, a per-call approval has not given the scope
// out already, and the source can be read. So a secret goes to the call it
// was approved for, never to code serving another call that happens to
// run at the same time. Every answer is audited (credential_issued,
// credential_denied: scope, the call the token names, tool, grant, reason),
// never with the value, and nothing logs it.
//
// A command source's output is kept in memory for the grant it was read
// under (credKeep, under h.mu), so that a vault is not asked again for every
// call; it is dropped once that grant is not live, at the next request, and
// when the epoch ends. Per-call scopes keep nothing.

// credKey names a kept secret: the grant it was read under, and the scope.
type credKey struct {
	grant epoch.GrantID
	scope string
}

// keptSecret is a command source's output kept for the life of its grant.
type keptSecret struct {
	g     *grant.Grant
	value string
}

// openCredentials reads the sources of the project's scopes (env values
// once, now) and reports those that cannot work, without any value.
func (h *Host) openCredentials() {
	h.credKeep = map[credKey]keptSecret{}
	if len(h.opts.Credentials) == 0 {
		return
	}
	s, err := credsource.New(h.opts.Dir, h.opts.Credentials, append(os.Environ(), h.opts.CredentialEnv...))
	if err != nil {
		h.logf("%v: no credential will be handed out", err)
		return
	}
	// The host may be a child subreaper that reaps and kills children it
	// does not know: a command source is one of its own. It starts with
	// the environment a server would, less the broker's variable: no env
	// source's value (credenv took them out of the host's own).
	s.SetStarter(func(cmd *exec.Cmd) error {
		cmd.Env = h.childEnv(nil)
		return childproc.StartOwn(cmd)
	}, childproc.Forget)
	h.creds = s
	for _, scope := range s.Scopes() {
		src := s.Source(scope)
		if src.Kind == credsource.KindNone || src.Kind == credsource.KindCommand {
			continue // nothing to hand over; a command is run only when needed
		}
		if err := src.Check(); err != nil {
			h.logf("warning: %v", err)
		}
	}
}

// openBroker opens epoch ep's broker socket, in the host's socket directory,
// when the project declares a scope; nil otherwise or when it cannot (the
// server then gets no credential from the host, and the log says why).
func (h *Host) openBroker(ep epoch.Epoch) *credbroker.Broker {
	if h.creds == nil {
		return nil
	}
	dir, err := notify.MakeDir(h.opts.Dir)
	var b *credbroker.Broker
	if err == nil {
		h.sweepOnce.Do(func() { credbroker.RemoveStale(dir) }) // left by killed hosts
		b, err = credbroker.Listen(layout.CredentialSocket(dir, ep))
	}
	if err != nil {
		h.logf("epoch %s: %v: the server can get no credential from the host", ep, err)
		return nil
	}
	return b
}

// childEnv is the environment a child of broker b starts with: the host's,
// less the variables of env sources and any broker variables the host
// itself inherited (MCPEPOCH_CREDENTIALS_*), plus b's. nil (the host's own)
// when the project declares no scope.
func (h *Host) childEnv(b *credbroker.Broker) []string {
	if h.creds == nil {
		return nil
	}
	env := slices.DeleteFunc(h.creds.Strip(os.Environ()), func(kv string) bool {
		return strings.HasPrefix(kv, "MCPEPOCH_CREDENTIALS_")
	})
	if b != nil {
		env = append(env, b.Env()...)
	}
	return env
}

// serveBroker serves child c's broker until c is reaped or the host ends;
// then what was kept for c's epoch is dropped.
func (h *Host) serveBroker(c *child, b *credbroker.Broker) {
	if b == nil {
		return
	}
	c.broker = b
	b.Admit = func(peer notify.Peer) (string, string) { return h.checkPeer(c, peer) }
	go b.Serve(h.ctx, func(ctx context.Context, peer notify.Peer, req credwire.Request) credwire.Answer {
		return h.credential(ctx, c, peer, req)
	}, func(peer notify.Peer, scope, code string) {
		h.credentialDenied(c, peer, scope, nil, code)
	})
	go func() {
		select {
		case <-c.done:
		case <-h.ctx.Done():
		}
		b.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for k, v := range h.credKeep {
			if v.g.ExecutionEpoch == c.epoch {
				delete(h.credKeep, k)
			}
		}
	}()
}

// credDecision is which call a request is for, or why none is.
type credDecision struct {
	call      *call
	key       string // the call's h.inflight key
	src       *credsource.Source
	perCall   bool
	kept      string // a kept secret, when one is
	code, msg string // a refusal
}

// credential answers one well-formed broker request of child c's epoch.
func (h *Host) credential(ctx context.Context, c *child, peer notify.Peer, req credwire.Request) credwire.Answer {
	if code, msg := h.checkPeer(c, peer); code != "" {
		return h.credentialDenied(c, peer, req.Scope, nil, code, msg)
	}
	h.mu.Lock()
	d := h.decideCredentialLocked(c, req.Scope, req.Call, time.Now())
	h.mu.Unlock()
	if d.code != "" {
		return h.credentialDenied(c, peer, req.Scope, d.call, d.code, d.msg)
	}
	secret := d.kept
	if secret == "" {
		var err error
		if secret, err = d.src.Read(ctx); err != nil {
			h.mu.Lock()
			delete(d.call.issued, req.Scope) // nothing was handed out: the approval still holds
			h.mu.Unlock()
			return h.credentialDenied(c, peer, req.Scope, d.call, credwire.CodeSourceFailed, err.Error())
		}
	}
	h.mu.Lock()
	// The call may have ended, or its grant been revoked, while the source
	// was read: the decision is made again before anything is handed over.
	code, msg := h.stillValidLocked(c, d, time.Now())
	if code == "" {
		if err := h.audit.healthy(); err != nil {
			code, msg = credwire.CodeUnavailable, "the audit log cannot be written ("+err.Error()+"); no secret is handed out without its record"
		}
	}
	if code != "" {
		delete(d.call.issued, req.Scope)
		h.mu.Unlock()
		return h.credentialDenied(c, peer, req.Scope, d.call, code, msg)
	}
	var key credKey
	keep := d.src.Cacheable() && !d.perCall
	if keep {
		key = credKey{d.call.grant.ID, req.Scope}
		h.credKeep[key] = keptSecret{g: d.call.grant, value: secret}
	}
	ticket := h.audit.guard(audit.TypeCredentialIssued, c.epoch, h.run, h.credentialFields(peer, req.Scope, d.call), true)
	h.mu.Unlock()
	// No action without its audit record: the secret leaves only once its
	// credential_issued is in the file, as a tools/call is forwarded only
	// once its tool_called is. The wait is outside the host's lock.
	if !h.audit.whenRecorded(ticket) {
		h.mu.Lock()
		delete(d.call.issued, req.Scope)
		if keep {
			delete(h.credKeep, key)
		}
		h.mu.Unlock()
		why := "the audit log could not be written"
		if err := h.audit.healthy(); err != nil {
			why += " (" + err.Error() + ")"
		}
		return h.credentialDenied(c, peer, req.Scope, d.call, credwire.CodeUnavailable, why, "; no secret is handed out without its record")
	}
	return credbroker.Issue(secret)
}

// checkPeer refuses a peer that is not child c or one of its childproc.Descendants,
// as the kernel reported it.
func (h *Host) checkPeer(c *child, peer notify.Peer) (code, msg string) {
	switch {
	case !peer.Checked:
		return credwire.CodeWrongProcess, "this system does not tell which process connected, and no secret is handed to an unknown process"
	case peer.UID != os.Geteuid():
		return credwire.CodeWrongProcess, fmt.Sprintf("uid %d is not the host's uid %d", peer.UID, os.Geteuid())
	case peer.PID <= 0 || !proctree.IsAncestor(peer.PID, c.pid):
		return credwire.CodeWrongProcess, fmt.Sprintf("process %d is neither the server of epoch %s (pid %d) nor one of its descendants", peer.PID, c.epoch, c.pid)
	}
	return "", ""
}

// decideCredentialLocked finds the call of child c whose token is token
// and decides whether its request for scope is answered, reserving a
// per-call scope for it. h.mu is held.
func (h *Host) decideCredentialLocked(c *child, scope, token string, now time.Time) credDecision {
	h.pruneKeptLocked(now)
	if c != h.child {
		return credDecision{code: credwire.CodeNotInCall, msg: fmt.Sprintf("epoch %s is no longer the running one", c.epoch)}
	}
	key, cl := h.callOfTokenLocked(c, token)
	if cl == nil {
		return credDecision{code: credwire.CodeNotInCall, msg: fmt.Sprintf("the call token names no tools/call of epoch %s in flight: ask while handling the call that needs scope %s, with the token the host put in that request's params._meta[%q]", c.epoch, scope, credwire.MetaKey)}
	}
	cfg, declared := h.opts.Credentials[scope]
	src := h.creds.Source(scope)
	switch {
	case !declared || src == nil:
		return credDecision{call: cl, code: credwire.CodeUnknownScope, msg: fmt.Sprintf("mcpepoch.toml declares no [credentials.%s]", scope)}
	case cfg.Delivery() != config.DeliverBroker:
		return credDecision{call: cl, code: credwire.CodeNotBroker, msg: fmt.Sprintf("scope %s is delivered with deliver = %q, not through the broker", scope, cfg.Delivery())}
	case !h.callUsesLocked(cl, scope):
		return credDecision{call: cl, code: credwire.CodeScopeNotUsed, msg: fmt.Sprintf("call %.64s (tool %s) is not granted scope %s: mcpepoch.toml [credentials.%s] tools says which tools use it, and the call's grant must name it", cl.id, cl.tool, scope, scope)}
	}
	perCall := h.policy.PerCall(scope) // re-read with [grants], held at the floor
	d := credDecision{call: cl, key: key, src: src, perCall: perCall}
	if d.code, d.msg = grantProblem(cl.grant, now); d.code == "" && perCall && cl.issued[scope] {
		d.code, d.msg = credwire.CodePerCallUsed, fmt.Sprintf("scope %s is approved for each use: this call's approval already gave it out once; a second use needs a new approval", scope)
	}
	if d.code != "" {
		return d
	}
	if perCall {
		if cl.issued == nil {
			cl.issued = map[string]bool{}
		}
		cl.issued[scope] = true
	} else if src.Cacheable() {
		d.kept = h.credKeep[credKey{cl.grant.ID, scope}].value
	}
	return d
}

// callOfTokenLocked returns the h.inflight key and the tools/call of child
// c whose token is token, comparing each in constant time; nil when none
// is in flight (ended, of another epoch, or never one).
func (h *Host) callOfTokenLocked(c *child, token string) (string, *call) {
	var (
		key   string
		found *call
	)
	for k, cl := range h.inflight {
		if cl.child == c && cl.method == "tools/call" && credbroker.TokenEqual(token, cl.credToken) {
			key, found = k, cl
		}
	}
	return key, found
}

// bindCallLocked gives tools/call cl, about to be forwarded as line, its
// token (credwire.MetaKey in params._meta) when the project declares a
// credential scope, replacing one the client sent; line is returned as is
// otherwise. An error means params._meta is not an object: the call is
// refused. h.mu is held.
func (h *Host) bindCallLocked(cl *call, line []byte) ([]byte, error) {
	if h.creds == nil {
		return line, nil
	}
	cl.credToken = credbroker.NewToken()
	tok, _ := json.Marshal(cl.credToken)
	out, err := jsonrpc.SetMember(line, tok, "params", "_meta", credwire.MetaKey)
	if err != nil {
		cl.credToken = ""
		return nil, err
	}
	return out, nil
}

// callUsesLocked reports whether cl was dispatched under a grant that names
// scope, for a tool the policy says uses it.
func (h *Host) callUsesLocked(cl *call, scope string) bool {
	if cl.grant == nil || !slices.Contains(cl.grant.CredentialScope, scope) {
		return false
	}
	scopes, _ := h.policy.Credentials(cl.tool)
	return slices.Contains(scopes, scope)
}

// grantProblem says why g no longer covers the call it was dispatched
// under. A per-call grant is used up by the dispatch itself (grant.Store
// Use), which ends it for every other call, not for that one.
func grantProblem(g *grant.Grant, now time.Time) (code, msg string) {
	if g.RevokedAt != nil && !(g.ExpiresWhen == grant.ExpiresPerCall && g.RevokedReason == grant.RevokedUsed) {
		if g.RevokedReason == grant.RevokedExpired {
			return credwire.CodeGrantExpired, fmt.Sprintf("grant %s expired while the call ran", g.ID)
		}
		return credwire.CodeGrantRevoked, fmt.Sprintf("grant %s was revoked (%s) while the call ran", g.ID, g.RevokedReason)
	}
	if d, err := time.ParseDuration(g.ExpiresWhen); err == nil && now.After(g.IssuedAt.Add(d)) {
		return credwire.CodeGrantExpired, fmt.Sprintf("grant %s expired at %s, while the call ran", g.ID, g.IssuedAt.Add(d).UTC().Format(time.RFC3339))
	}
	return "", ""
}

// stillValidLocked repeats the checks of decision d after its source was
// read. h.mu is held.
func (h *Host) stillValidLocked(c *child, d credDecision, now time.Time) (code, msg string) {
	if c != h.child || h.inflight[d.key] != d.call {
		return credwire.CodeNotInCall, "the call ended while the secret was read"
	}
	return grantProblem(d.call.grant, now)
}

// pruneKeptLocked drops kept secrets whose grant is no longer live.
func (h *Host) pruneKeptLocked(now time.Time) {
	for k, v := range h.credKeep {
		if !v.g.Live(now) {
			delete(h.credKeep, k)
		}
	}
}

// credentialDenied audits and logs a refusal of a request for scope (cl,
// the call it was for, may be nil) and returns the answer.
func (h *Host) credentialDenied(c *child, peer notify.Peer, scope string, cl *call, code string, msg ...string) credwire.Answer {
	fields := h.credentialFields(peer, scope, cl)
	fields["reason"] = code
	h.audit.event(audit.TypeCredentialDenied, c.epoch, h.run, fields)
	text := strings.Join(msg, "")
	h.logf("credential %q refused to pid %d (%s): %s", scope, peer.PID, code, text)
	return credbroker.Refusal(code, text)
}

// credentialFields are the audit fields of a broker answer: never a value.
func (h *Host) credentialFields(peer notify.Peer, scope string, cl *call) map[string]any {
	fields := map[string]any{"scope": scope, "pid": strconv.Itoa(peer.PID)}
	if cl != nil {
		fields["call"] = string(cl.id)
		fields[audit.FieldTool] = cl.tool
		if cl.grant != nil {
			fields["grant"] = cl.grant.ID
		}
	}
	return fields
}
