package localapi

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mcpepoch/mcpepoch/notify"
)

// Permit says who may send a request type. The zero Permit lets nobody:
// a route that does not declare who may send it is refused.
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
)

// String returns the permit's name as error messages show it.
func (p Permit) String() string {
	switch p {
	case PermitNobody:
		return "nobody"
	case PermitSameUser:
		return "same-user"
	}
	return fmt.Sprintf("Permit(%d)", uint8(p))
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

// Routes returns the host's dispatch table: every request type of the local
// API with who may send it. Each call returns a fresh slice.
func Routes() []Route {
	return []Route{
		{Type: TypeBuildComplete, Permit: PermitSameUser, Check: checkBuild},
		{Type: TypeBuildFailed, Permit: PermitSameUser},
		{Type: TypeRestart, Permit: PermitSameUser},
		{Type: TypeStatus, Permit: PermitSameUser},
		{Type: TypeReview, Permit: PermitSameUser},
		{Type: TypeApprove, Permit: PermitSameUser},
		{Type: TypeApproveWeb, Permit: PermitSameUser},
		{Type: TypeApproveWait, Permit: PermitSameUser},
		{Type: TypeProposeSSH, Permit: PermitSameUser},
		{Type: TypeApproveSSH, Permit: PermitSameUser},
		{Type: TypeRevoke, Permit: PermitSameUser},
		{Type: TypeGrants, Permit: PermitSameUser},
		{Type: TypeTrees, Permit: PermitSameUser},
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
}

// NewMux returns a Mux for table. It panics when a route has an empty or
// duplicate Type: the table is part of the program, not input.
func NewMux(table []Route) *Mux {
	m := &Mux{uid: os.Geteuid(), routes: map[string]Route{}, handlers: map[string]notify.Handler{}}
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

// Serve answers one request (a notify.Handler). A type not in the table,
// or without a handler, gets notify.CodeUnknownType; a peer the route does
// not permit gets notify.CodeForbidden; a request failing the route's Check
// gets notify.CodeBadRequest. Only then does the handler run.
func (m *Mux) Serve(ctx context.Context, peer notify.Peer, req notify.Request) notify.Response {
	r, ok := m.routes[req.Type]
	h := m.handlers[req.Type]
	if !ok || h == nil {
		return notify.ErrorResponse(notify.CodeUnknownType, fmt.Sprintf("unknown request type %q", req.Type))
	}
	if !m.permits(r.Permit, peer) {
		return notify.ErrorResponse(notify.CodeForbidden, fmt.Sprintf("request type %q: sender not permitted (permit %s)", req.Type, r.Permit))
	}
	if r.Check != nil {
		if err := r.Check(req); err != nil {
			return notify.ErrorResponse(notify.CodeBadRequest, err.Error())
		}
	}
	return h(ctx, peer, req)
}

// permits reports whether p lets peer send.
func (m *Mux) permits(p Permit, peer notify.Peer) bool {
	switch p {
	case PermitSameUser:
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
