package host_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
)

// TestAuditLockHeldFailsClosed: another writer holding the audit log's
// lock for longer than the host waits (2 s) makes the host refuse
// tools/call with audit_unavailable naming the lock file; once the lock
// is released, calls run again, and the log holds the calls that ran and
// not the refused one, with no gap. Unlike a full disk, this needs no
// privilege and runs on macOS too.
func TestAuditLockHeldFailsClosed(t *testing.T) {
	t.Parallel()
	p := newGrantsProject(t, nil)
	s := gConnect(t, p)
	s.list()
	s.text("version", nil)
	// The call's tool_result is written after its answer: taking the lock
	// before it is in the log would lose it (records_lost), a gap this test
	// does not mean to make.
	settledLog(t, filepath.Join(p.dir, ".mcpepoch", "audit.jsonl"), 1)
	lockPath := filepath.Join(p.dir, ".mcpepoch", "audit.lock")
	lk, err := os.OpenFile(lockPath, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	if err := unix.Flock(int(lk.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	deadline := time.Now().Add(waitLong)
	for data == nil {
		res, err := s.call("version", nil)
		var werr *jsonrpc.Error
		switch {
		case errors.As(err, &werr) && werr.Code == host.CodeAuditUnavailable:
			data = jsonData(t, werr.Data)
		case err != nil || res.IsError:
			t.Fatalf("call: %v %v", res, err)
		case time.Now().After(deadline):
			t.Fatalf("calls still run %v after the audit lock was taken", waitLong)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if data["file"] != lockPath || !strings.Contains(data["error"].(string), "held by another writer") {
		t.Errorf("error data %v: want the lock file and why", data)
	}
	unix.Flock(int(lk.Fd()), unix.LOCK_UN)
	deadline = time.Now().Add(waitLong)
	for {
		res, err := s.call("version", nil)
		if err == nil && !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls still refused %v after the lock was released: %v", waitLong, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.close()
	// The refused call's record, the only one the lock kept out, guarded
	// a call that never ran: there is no gap to record.
	if out, code := p.verify(); code != 0 || strings.Contains(out.Stdout, "records_lost") || strings.Contains(out.Stdout, "warning") {
		t.Fatalf("audit verify: exit %d, want 0 without a gap:\n%s", code, out)
	}
	called := 0
	for _, r := range p.records() {
		if r.Type == audit.TypeToolCalled {
			called++
		}
	}
	if called != 2 {
		t.Errorf("%d tool_called records, want 2: the calls that ran, not the refused one", called)
	}
}

func jsonData(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("error data %s: %v", raw, err)
	}
	return m
}

// settledLog waits until the log holds the tool_result records of calls
// calls, and returns its size and the length of its shortest tool_called
// line.
func settledLog(t *testing.T, path string, calls int) (int64, int) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		b, _ := os.ReadFile(path)
		if strings.Count(string(b), `"type":"tool_result"`) >= calls {
			minRec := 1 << 20
			for _, l := range strings.SplitAfter(string(b), "\n") {
				if strings.Contains(l, `"type":"tool_called"`) {
					minRec = min(minRec, len(l))
				}
			}
			return int64(len(b)), minRec
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for the log to hold the tool_result records of %d calls; it holds:\n%s", waitLong, calls, b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
