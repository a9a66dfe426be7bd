package host_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
)

// TestRequestsAudited: client requests that run server code besides
// tools/call — resources/read, prompts/get, resources/subscribe,
// logging/setLevel, completion/complete — are forwarded only after their
// request_forwarded record (method, what they name, epoch, run) and the
// server's answer is recorded as request_result (an error with its code);
// a prompt's arguments are in the log only as a keyed digest; the
// session's requests replayed to the server of a new epoch are recorded
// too. While the log cannot be written (its lock held by another writer),
// such a request fails with the error tools/call gets and reaches no
// server. audit show lists the records, and audit verify passes without a
// warning.
func TestRequestsAudited(t *testing.T) {
	t.Parallel()
	p := newProject(t, map[string]string{"FIXTURE_PROMPTS": "greet", "FIXTURE_RESOURCES": "doc", "FIXTURE_FEATURES": "1"})
	c := startRaw(t, p, nil)
	c.initialize()
	answered := func(method string, params map[string]any) *wire {
		t.Helper()
		r := c.roundTrip(method, params)
		if r.Error != nil {
			t.Fatalf("%s: %v", method, r)
		}
		return r
	}
	if r := answered("resources/read", map[string]any{"uri": "fixture://doc"}); !strings.Contains(string(r.Result), "resource doc revision=A") {
		t.Fatalf("resources/read: %v", r)
	}
	answered("prompts/get", map[string]any{"name": "greet", "arguments": map[string]any{"who": "sekrit-value"}})
	answered("resources/subscribe", map[string]any{"uri": "fixture://doc"})
	answered("logging/setLevel", map[string]any{"level": "debug"})
	if r := c.roundTrip("completion/complete", map[string]any{"ref": map[string]any{"type": "ref/prompt", "name": "greet"},
		"argument": map[string]any{"name": "who", "value": "sek"}}); r.Error == nil {
		t.Fatalf("completion/complete: %v, want the fixture's error (it has no completions)", r)
	}
	first := string(p.status().Execution.Epoch)

	// The log's lock held by another writer: the request is refused. The
	// first catalog's record is written first, as the host writes it in
	// the background: a record the lock kept out would be lost, and
	// verify would say so.
	waitFor(t, waitLong, "the first catalog's record", func() bool {
		return strings.Contains(p.read(".mcpepoch/audit.jsonl"), `"type":"catalog_published"`)
	})
	lk, err := os.OpenFile(p.path(".mcpepoch/audit.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	refusedID := c.request("prompts/get", map[string]any{"name": "refused-prompt"})
	r := c.response(refusedID, waitLong)
	wantError(t, r, host.CodeAuditUnavailable, "audit_unavailable:")
	if data := jsonData(t, r.Error.Data); data["method"] != "prompts/get" || data["reason"] != "audit_unavailable" {
		t.Errorf("error data %v: want the method and reason tools/call gets", data)
	}
	unix.Flock(int(lk.Fd()), unix.LOCK_UN)
	deadline := time.Now().Add(waitLong)
	for r := c.roundTrip("resources/read", map[string]any{"uri": "fixture://doc"}); r.Error != nil; r = c.roundTrip("resources/read", map[string]any{"uri": "fixture://doc"}) {
		if time.Now().After(deadline) {
			t.Fatalf("requests still refused %s after the lock was released: %v", waitLong, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := len(c.responses(refusedID)); n != 1 {
		t.Errorf("%d answers to the refused request, want its refusal only", n)
	}

	p.restart()
	second := string(p.waitState(host.StateReady, waitLong).Execution.Epoch)
	if second == first {
		t.Fatalf("mcpepoch restart: still epoch %s", first)
	}
	c.stdin.Close()
	<-c.done

	log := p.read(".mcpepoch/audit.jsonl")
	for _, bad := range []string{"refused-prompt", "sekrit", `"child_output_dropped"`} {
		if strings.Contains(log, bad) {
			t.Errorf("the log holds %s:\n%s", bad, log)
		}
	}
	recs := parseAuditRecords(t, p.cli("audit", "show", "--dir", p.dir, "--json").Stdout)
	want := []struct {
		epoch, method string
		fields        map[string]string
		outcome       string
	}{
		{first, "resources/read", map[string]string{"uri": "fixture://doc"}, "result"},
		{first, "prompts/get", map[string]string{"name": "greet"}, "result"},
		{first, "resources/subscribe", map[string]string{"uri": "fixture://doc"}, "result"},
		{first, "logging/setLevel", map[string]string{"level": "debug"}, "result"},
		{first, "completion/complete", map[string]string{"ref": "ref/prompt", "name": "greet", "argument": "who"}, "error"},
		{second, "resources/subscribe", map[string]string{"uri": "fixture://doc", "replayed": "true"}, "result"},
		{second, "logging/setLevel", map[string]string{"level": "debug", "replayed": "true"}, "result"},
	}
	i := 0
	for _, w := range want {
		fwd := nextRequestRecord(recs, &i, audit.TypeRequestForwarded, w.epoch, w.method)
		if fwd == nil {
			t.Fatalf("no request_forwarded %s of epoch %s in order:\n%s", w.method, w.epoch, gFormat(recs))
		}
		for k, v := range w.fields {
			if got := fieldText(fwd.Fields[k]); got != v {
				t.Errorf("request_forwarded %s: %s = %q, want %q", w.method, k, got, v)
			}
		}
		j := i
		res := nextRequestRecord(recs, &j, audit.TypeRequestResult, w.epoch, w.method)
		if res == nil || fieldText(res.Fields["outcome"]) != w.outcome {
			t.Fatalf("request_result %s after its request_forwarded: %+v, want outcome %s", w.method, res, w.outcome)
		}
	}
	for _, r := range recs {
		if r.Type == audit.TypeRequestForwarded && r.Fields["method"] == "prompts/get" {
			if d, _ := r.Fields[audit.FieldArgsDigest].(string); !strings.HasPrefix(d, "hmac-sha256:") {
				t.Errorf("prompts/get args_digest %q, want a keyed digest", d)
			}
		}
		if r.Type == audit.TypeRequestResult && r.Fields["method"] == "completion/complete" && fieldText(r.Fields["error_code"]) == "" {
			t.Errorf("completion/complete request_result has no error_code: %v", r.Fields)
		}
	}
	if out := p.cli("audit", "show", "--dir", p.dir, "--type", "request_forwarded").Stdout; !strings.Contains(out, "uri=fixture://doc") || !strings.Contains(out, "method=resources/read") {
		t.Errorf("audit show --type request_forwarded:\n%s", out)
	}
	if out, code := p.verify(); code != 0 || strings.Contains(out.Stdout, "warning") {
		t.Errorf("audit verify: exit %d, want 0 without a warning\n%s", code, out)
	}
}

// nextRequestRecord returns the first record of type typ, epoch and
// method at or after recs[*i], and moves *i past it.
func nextRequestRecord(recs []audit.Record, i *int, typ, epoch, method string) *audit.Record {
	for ; *i < len(recs); *i++ {
		r := recs[*i]
		if r.Type == typ && r.Epoch == epoch && r.Fields["method"] == method {
			*i++
			return &r
		}
	}
	return nil
}

// fieldText is a record field as text.
func fieldText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case bool:
		if v {
			return "true"
		}
		return "false"
	default:
		return fmt.Sprint(v)
	}
}
