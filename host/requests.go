package host

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// Audit records of client requests other than tools/call (no action
// without its audit record): a request that runs server code —
// resources/read, prompts/get, completion/complete, resources/subscribe
// and unsubscribe, logging/setLevel, and any method the host does not
// know — is forwarded only once its request_forwarded record is in the
// log, as a tools/call after its tool_called, and fails with
// CodeAuditUnavailable when the log cannot be written; the server's
// answer is recorded as request_result. No grant is needed for them.

// unrecordedMethods are the client requests forwarded without a record:
// the handshake, ping, the stateless era's subscription stream, and the
// listings, which name what the server offers and change nothing (a new
// tools revision is recorded as catalog_published). tools/call has its
// own records.
var unrecordedMethods = map[string]bool{
	"initialize": true, "server/discover": true, "ping": true, "subscriptions/listen": true,
	"tools/call": true, "tools/list": true, "prompts/list": true, "resources/list": true,
	"resources/templates/list": true,
}

// recordedRequest reports whether a client request of method is forwarded
// only after its request_forwarded record.
func recordedRequest(method string) bool { return !unrecordedMethods[method] }

// maxRecordedName bounds a uri, name or level copied into a record, in
// bytes; a longer one is cut and marked with "…".
const maxRecordedName = 1024

// recordRequestLocked queues the request_forwarded record of client
// request m for its call cl, and returns its ticket; false when the log
// cannot be written, and then m was answered with CodeAuditUnavailable.
func (h *Host) recordRequestLocked(m *jsonrpc.Message, cl *call) (int64, bool) {
	if refusal := h.audit.refusal(m); refusal != nil {
		h.toClient(refusal)
		return 0, false
	}
	cl.recorded = true
	return h.audit.guard(audit.TypeRequestForwarded, h.child.epoch, h.run, h.requestFields(m.Method, m.Params), !h.clientReading), true
}

// requestFields returns the fields of the request_forwarded record of a
// request of method with params: the method, and what it names (the uri
// of resources/read, resources/subscribe and unsubscribe; a prompt's name
// and a keyed digest of its arguments for prompts/get; the ref's name or
// uri, the argument's name and a keyed digest of it for
// completion/complete; the level of logging/setLevel). Params are read
// leniently: what cannot be read is left out, for the server to refuse.
func (h *Host) requestFields(method string, params json.RawMessage) map[string]any {
	f := map[string]any{audit.FieldMethod: method}
	var p struct {
		URI       string          `json:"uri"`
		Name      string          `json:"name"`
		Level     string          `json:"level"`
		Arguments json.RawMessage `json:"arguments"`
		Ref       struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Argument json.RawMessage `json:"argument"`
	}
	if len(params) > 0 {
		json.Unmarshal(params, &p)
	}
	set := func(k, v string) {
		if v != "" {
			f[k] = boundedName(v)
		}
	}
	switch method {
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		set("uri", p.URI)
	case "prompts/get":
		set("name", p.Name)
		if len(p.Arguments) > 0 {
			f[audit.FieldArgsDigest] = h.audit.argsDigest(p.Arguments)
		}
	case "completion/complete":
		set("ref", p.Ref.Type)
		set("name", p.Ref.Name)
		set("uri", p.Ref.URI)
		var a struct {
			Name string `json:"name"`
		}
		json.Unmarshal(p.Argument, &a)
		set("argument", a.Name)
		if len(p.Argument) > 0 {
			f[audit.FieldArgsDigest] = h.audit.argsDigest(p.Argument)
		}
	case "logging/setLevel":
		set("level", p.Level)
	}
	return f
}

// boundedName is s cut to maxRecordedName bytes, on a character boundary.
func boundedName(s string) string {
	if len(s) <= maxRecordedName {
		return s
	}
	return strings.ToValidUTF8(s[:maxRecordedName], "") + "…"
}

// requestResultLocked queues the request_result record of request cl,
// which child c answered with m (line): the method, result or error (and
// its code), and how long it took.
func (h *Host) requestResultLocked(c *child, cl *call, m *jsonrpc.Message, line []byte) {
	f := map[string]any{audit.FieldMethod: cl.method, "outcome": "result",
		"duration_ms": strconv.FormatInt(time.Since(cl.sent).Milliseconds(), 10)}
	if m.HasError {
		f["outcome"] = "error"
		if e, ok := jsonrpc.Member(line, "error"); ok {
			if code, ok := jsonrpc.Member(e, "code"); ok && len(code) <= 24 {
				f["error_code"] = string(code)
			}
		}
	}
	h.audit.event(audit.TypeRequestResult, c.epoch, h.run, f)
}

// replayRecorded replays one request of the client's session (its log
// level, a resource subscription) to the new child c, as the client's
// own requests are: once its request_forwarded record (replayed: true)
// is in the log, never when it could not be written, and its answer
// recorded as request_result.
func (h *Host) replayRecorded(ctx context.Context, c *child, r sessionRequest) error {
	h.mu.Lock()
	f := h.requestFields(r.method, r.params)
	f["replayed"] = true
	t := h.audit.guard(audit.TypeRequestForwarded, c.epoch, h.run, f, true)
	h.mu.Unlock()
	if !h.audit.whenRecorded(t) {
		return errors.New("not replayed: its audit record could not be written")
	}
	sent := time.Now()
	_, err := h.privateCall(ctx, c, r.method, r.params)
	res := map[string]any{audit.FieldMethod: r.method, "replayed": true, "outcome": "result",
		"duration_ms": strconv.FormatInt(time.Since(sent).Milliseconds(), 10)}
	if err != nil {
		res["outcome"] = "error"
	}
	h.audit.event(audit.TypeRequestResult, c.epoch, h.run, res)
	return err
}
