// Package notify is the hook↔host socket protocol: newline-delimited JSON
// over one unix domain socket per host (the wire format, the socket
// directory and the client are package notify/proto's, re-exported here),
// and the host's side of it, [Listener], with the peer credential check.
//
// The listener is apart from proto because it needs package net, which
// the front binary (cmd/mcpepoch: version and record) must not link; the
// hook's side of the protocol, which the front runs, imports proto.
package notify

import (
	"context"

	"github.com/mcpepoch/mcpepoch/notify/proto"
)

// The protocol's types, as proto defines them.
type (
	Request           = proto.Request
	Response          = proto.Response
	RemoteError       = proto.RemoteError
	VersionError      = proto.VersionError
	NotAnsweringError = proto.NotAnsweringError
	Conn              = proto.Conn
	Result            = proto.Result
	Peers             = proto.Peers
	Peer              = proto.Peer
	Handler           = proto.Handler
)

// The protocol's constants, as proto defines them.
const (
	ProtocolVersion        = proto.ProtocolVersion
	MaxLine                = proto.MaxLine
	MaxSocketPath          = proto.MaxSocketPath
	SocketSuffix           = proto.SocketSuffix
	TypeError              = proto.TypeError
	TypeReceived           = proto.TypeReceived
	TypeWorking            = proto.TypeWorking
	CodeForbidden          = proto.CodeForbidden
	CodeBadRequest         = proto.CodeBadRequest
	CodeUnsupportedVersion = proto.CodeUnsupportedVersion
	CodeUnknownType        = proto.CodeUnknownType
	CodeInternal           = proto.CodeInternal
	CodeBusy               = proto.CodeBusy
	AnswerWait             = proto.AnswerWait
	ProgressInterval       = proto.ProgressInterval
	SilenceWait            = proto.SilenceWait
)

// ErrInUse is proto.ErrInUse: a socket a live host listens on.
var ErrInUse = proto.ErrInUse

// Dial is proto.Dial.
func Dial(ctx context.Context, socketPath string) (*Conn, error) { return proto.Dial(ctx, socketPath) }

// Send is proto.Send.
func Send(ctx context.Context, socketPath string, req Request) (Response, error) {
	return proto.Send(ctx, socketPath, req)
}

// Broadcast is proto.Broadcast.
func Broadcast(ctx context.Context, projectRoot string, req Request) []Result {
	return proto.Broadcast(ctx, projectRoot, req)
}

// NewPeers is proto.NewPeers.
func NewPeers(projectRoot string) *Peers { return proto.NewPeers(projectRoot) }

// Dir is proto.Dir.
func Dir(projectRoot string) (string, error) { return proto.Dir(projectRoot) }

// Hosts is proto.Hosts.
func Hosts(projectRoot string) ([]string, error) { return proto.Hosts(projectRoot) }

// MakeDir is proto.MakeDir.
func MakeDir(projectRoot string) (string, error) { return proto.MakeDir(projectRoot) }

// ErrorResponse is proto.ErrorResponse.
func ErrorResponse(code, message string) Response { return proto.ErrorResponse(code, message) }
