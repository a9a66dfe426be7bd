package host_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
)

// mountSmallTmpfs mounts a tmpfs of size bytes at dir, or skips the test
// saying why (mounting needs root, or CAP_SYS_ADMIN in a user namespace).
// On macOS, where this test does not build, the audit package's tests
// simulate a full disk with RLIMIT_FSIZE instead (EFBIG).
func mountSmallTmpfs(t *testing.T, dir string, size int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.Itoa(size)+",mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v): needs root; the audit package tests a full disk with RLIMIT_FSIZE", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}

// fill writes to path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil && !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	if f == nil {
		return
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestAuditFullDiskFailsClosed: with the disk under .mcpepoch full, the
// host refuses tools/call with audit_unavailable instead of running calls
// it cannot record; when space is back, calls run again, the log verifies,
// and every call that ran has its tool_called record in the log.
func TestAuditFullDiskFailsClosed(t *testing.T) {
	p := newGrantsProject(t, nil)
	dotDir := filepath.Join(p.dir, ".mcpepoch")
	mountSmallTmpfs(t, dotDir, 512<<10)
	s := gConnect(t, p)
	s.list()
	// Call until the log's last page has less room than a record, so
	// that the next record needs a page the full disk cannot give (tmpfs
	// allocates whole pages): then records are lost, not only the head.
	logPath := filepath.Join(dotDir, "audit.jsonl")
	ran := 0
	for {
		s.text("version", nil)
		ran++
		size, minRec := settledLog(t, logPath, ran)
		if room := 4096 - size%4096; room < int64(minRec) {
			break
		}
	}
	before := ran
	filler := filepath.Join(dotDir, "filler")
	fill(t, filler)

	refused := 0
	var data map[string]any
	for range 40 {
		res, err := s.call("version", nil)
		var werr *jsonrpc.Error
		switch {
		case err == nil && !res.IsError:
			if refused > 0 {
				t.Fatalf("a call ran after one was refused, with the disk still full")
			}
			ran++
		case errors.As(err, &werr) && werr.Code == host.CodeAuditUnavailable:
			refused++
			if !strings.HasPrefix(werr.Message, "audit_unavailable: ") {
				t.Errorf("message %q", werr.Message)
			}
			data = jsonData(t, werr.Data)
		default:
			t.Fatalf("call: %v %v", res, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if refused == 0 {
		t.Fatalf("40 calls ran on a full disk, none refused")
	}
	if data["reason"] != "audit_unavailable" || !strings.HasPrefix(data["file"].(string), dotDir) ||
		!strings.Contains(data["error"].(string), "no space left on device") {
		t.Errorf("error data %v: want the file under %s and ENOSPC", data, dotDir)
	}
	t.Logf("full disk: %d calls ran (before the first failed write), %d refused", ran-before, refused)

	os.Remove(filler)
	deadline := time.Now().Add(waitLong)
	for {
		res, err := s.call("version", nil)
		if err == nil && !res.IsError {
			ran++
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls still refused %v after space came back: %v", waitLong, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.close()

	out, code := p.verify()
	if code != 0 {
		t.Fatalf("audit verify: exit %d, want 0:\n%s", code, out)
	}
	// Every call that ran is in the log: a call is forwarded only once its
	// tool_called record is in the file, so none is in a gap (what else
	// could not be written, a tool_result, may be).
	recorded, lost := 0, 0
	for _, r := range p.records() {
		switch r.Type {
		case audit.TypeToolCalled:
			recorded++
		case audit.TypeRecordsLost:
			types, _ := r.Fields["types"].(map[string]any)
			c, _ := types[audit.TypeToolCalled].(string)
			n, _ := strconv.Atoi(c)
			lost += n
		}
	}
	if recorded != ran || lost != 0 {
		t.Errorf("%d calls ran; %d tool_called records and %d counted lost, want %d and 0", ran, recorded, lost, ran)
	}
}
