package localapi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/notify"
)

// Permit says who may send a request type, and what the Mux proves of
// the sender before its handler runs. The zero Permit lets nobody: a route
// that does not declare who may send it is refused.
type Permit uint8

const (
	// PermitNobody refuses every sender; it is the zero Permit.
	PermitNobody Permit = iota
	// PermitSameUser lets a peer of the host's effective uid send the
	// request: on Linux and macOS the kernel's peer credentials say so
	// (notify.Peer.Checked); elsewhere the only proof is that the peer could
	// open a socket in the user's 0700 directory. A process the agent
	// starts passes this check: it never proves a person.
	PermitSameUser
	// PermitPerson lets the same senders as PermitSameUser, and then runs
	// the route's proof check (Mux.Prove), a rule of package approval, on
	// the sender: what it proves (an approval.Proven, same-user when it
	// proves no person) reaches the handler in its context (ProvenFrom).
	// The Mux refuses nobody for want of a person: whether what was proven
	// counts is the project's proof list's to say, and the handler's
	// refusal names the list. A PermitPerson route whose proof check was
	// never registered refuses every sender.
	PermitPerson
)

// String returns the permit's name as error messages show it.
func (p Permit) String() string {
	switch p {
	case PermitNobody:
		return "nobody"
	case PermitSameUser:
		return "same-user"
	case PermitPerson:
		return "person"
	}
	return fmt.Sprintf("Permit(%d)", uint8(p))
}

// ProofCheck is the proof check of a PermitPerson route: what peer proves
// by sending req. It runs before the handler, outside every lock of the
// host, and may read the process table.
type ProofCheck func(ctx context.Context, peer notify.Peer, req notify.Request) approval.Proven

// provenKey is the context key of what a PermitPerson sender proved.
type provenKey struct{}

// ProvenFrom returns what the sender of a PermitPerson request proved, as
// its route's proof check found it; false in the context of any other
// request.
func ProvenFrom(ctx context.Context) (approval.Proven, bool) {
	p, ok := ctx.Value(provenKey{}).(approval.Proven)
	return p, ok
}

// Route is one row of the dispatch table: a request type and who may send
// it.
type Route struct {
	// Type is the request type (notify.Request.Type), e.g. TypeStatus.
	Type string
	// Permit is who may send it; the zero value refuses everyone.
	Permit Permit
	// Check, when set, checks the request's fields before its handler
	// runs; an error becomes a notify.CodeBadRequest response naming the
	// field.
	Check func(notify.Request) error
}

// Routes returns the host's dispatch table: every request type of the
// local API with who may send it. Each call returns a fresh slice.
//
// Only approve asks the Mux to prove a person (PermitPerson): its sender
// is the person, and the terminal channel's rule (approval.AtTerminal,
// the host's proof check) says whether it stands for one. Every other
// route is PermitSameUser, each for its reason, written on its row: it
// reads, it signals what the host checks itself, it ends or narrows what
// runs, or the proof it carries is in its payload, checked by its
// handler. revoke stays PermitSameUser on purpose: a revoke only narrows
// access (a grant ends; nothing new runs), which an agent could do anyway
// by not calling, or by ending its client's host; a person who wants a
// grant gone at once must never be told to prove themselves first; and
// its second way, the request file a host reads when every socket slot
// is held (docs/approval.md), has no peer to prove. The audit log names
// who revoked and how (grant_revoked: revoked_by, via).
func Routes() []Route {
	return []Route{
		// A hint: the host recomputes the identity itself and trusts
		// nothing the hook says.
		{Type: TypeBuildComplete, Permit: PermitSameUser, Check: checkBuild},
		{Type: TypeBuildFailed, Permit: PermitSameUser},
		// A new epoch only ends grants (they follow the epoch).
		{Type: TypeRestart, Permit: PermitSameUser},
		// Reads: what runs, what a person reviews, what is held.
		{Type: TypeStatus, Permit: PermitSameUser},
		{Type: TypeReview, Permit: PermitSameUser},
		{Type: TypeGrants, Permit: PermitSameUser},
		{Type: TypeTrees, Permit: PermitSameUser},
		// The sender is the person: the host's proof check judges it at
		// a terminal (approval.Launch.Terminal).
		{Type: TypeApprove, Permit: PermitPerson},
		// They open a page or a proposal, or wait for one: nothing is
		// granted until an enrolled authenticator signs it (approval's
		// web and ssh channels), whoever asked.
		{Type: TypeApproveWeb, Permit: PermitSameUser},
		{Type: TypeApproveWait, Permit: PermitSameUser},
		{Type: TypeProposeSSH, Permit: PermitSameUser},
		// The proof is the payload's SSHSIG, which the handler verifies
		// (sshsig, approval.SSH); the sender proves nothing.
		{Type: TypeApproveSSH, Permit: PermitSameUser},
		// Only narrows access (see above).
		{Type: TypeRevoke, Permit: PermitSameUser},
	}
}

// Mux dispatches requests through a dispatch table to the handlers a host
// registered. Build it with NewMux, register with Handle, then pass its
// Serve method to notify.Listener.Serve. Handle must not be called once
// Serve runs; Serve is safe for concurrent use.
type Mux struct {
	uid      int
	routes   map[string]Route
	handlers map[string]notify.Handler
	proofs   map[string]ProofCheck
}

// NewMux returns a Mux for table. It panics when a route has an empty or
// duplicate Type: the table is part of the program, not input.
func NewMux(table []Route) *Mux {
	m := &Mux{uid: os.Geteuid(), routes: map[string]Route{}, handlers: map[string]notify.Handler{}, proofs: map[string]ProofCheck{}}
	for _, r := range table {
		if r.Type == "" {
			panic("localapi: route without type")
		}
		if _, dup := m.routes[r.Type]; dup {
			panic("localapi: duplicate route " + r.Type)
		}
		m.routes[r.Type] = r
	}
	return m
}

// Handle registers h for request type typ. It panics when typ is not in
// the Mux's table or already has a handler.
func (m *Mux) Handle(typ string, h notify.Handler) {
	if _, ok := m.routes[typ]; !ok {
		panic("localapi: no route for " + typ)
	}
	if _, dup := m.handlers[typ]; dup {
		panic("localapi: second handler for " + typ)
	}
	m.handlers[typ] = h
}

// Prove registers check as the proof check of request type typ, a
// PermitPerson route. It panics when typ is not such a route or already
// has one. Like Handle, it must not be called once Serve runs.
func (m *Mux) Prove(typ string, check ProofCheck) {
	if r, ok := m.routes[typ]; !ok || r.Permit != PermitPerson {
		panic("localapi: no PermitPerson route for " + typ)
	}
	if _, dup := m.proofs[typ]; dup {
		panic("localapi: second proof check for " + typ)
	}
	m.proofs[typ] = check
}

// Serve answers one request (a notify.Handler). A type not in the table,
// or without a handler, gets notify.CodeUnknownType; a peer the route does
// not permit gets notify.CodeForbidden, as does every sender of a
// PermitPerson route without a proof check; a request failing the route's
// Check gets notify.CodeBadRequest. Then a PermitPerson route's proof
// check runs, and its handler gets what it found (ProvenFrom). Only then
// does the handler run.
func (m *Mux) Serve(ctx context.Context, peer notify.Peer, req notify.Request) notify.Response {
	r, ok := m.routes[req.Type]
	h := m.handlers[req.Type]
	if !ok || h == nil {
		return notify.ErrorResponse(notify.CodeUnknownType, fmt.Sprintf("unknown request type %q", req.Type))
	}
	if !m.permits(r.Permit, peer) {
		return notify.ErrorResponse(notify.CodeForbidden, fmt.Sprintf("request type %q: sender not permitted (permit %s)", req.Type, r.Permit))
	}
	prove := m.proofs[req.Type]
	if r.Permit == PermitPerson && prove == nil {
		return notify.ErrorResponse(notify.CodeForbidden, fmt.Sprintf("request type %q: no proof check of the person who sends it (permit %s)", req.Type, r.Permit))
	}
	if r.Check != nil {
		if err := r.Check(req); err != nil {
			return notify.ErrorResponse(notify.CodeBadRequest, err.Error())
		}
	}
	if prove != nil {
		ctx = context.WithValue(ctx, provenKey{}, prove(ctx, peer, req))
	}
	return h(ctx, peer, req)
}

// permits reports whether p lets peer send.
func (m *Mux) permits(p Permit, peer notify.Peer) bool {
	switch p {
	case PermitSameUser, PermitPerson:
		return !peer.Checked || peer.UID == m.uid
	}
	return false
}

// WithPayload returns resp with Type typ and v, JSON-encoded, as Payload;
// a v that cannot be encoded gives a notify.CodeInternal error response.
func WithPayload(resp notify.Response, typ string, v any) notify.Response {
	b, err := json.Marshal(v)
	if err != nil {
		return notify.ErrorResponse(notify.CodeInternal, err.Error())
	}
	resp.Type, resp.Payload = typ, b
	return resp
}

// DecodePayload decodes the Payload of a response (or request) into a T,
// e.g. DecodePayload[Status](resp.Payload).
func DecodePayload[T any](payload json.RawMessage) (T, error) {
	var v T
	err := json.Unmarshal(payload, &v)
	return v, err
}
