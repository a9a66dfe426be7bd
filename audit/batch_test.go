package audit

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func batchOf(n int, tool string) []Event {
	evs := make([]Event, n)
	for i := range evs {
		evs[i] = Event{Type: TypeToolCalled, Epoch: "01JQBATCH", Fields: map[string]any{FieldTool: fmt.Sprint(tool, i)}}
	}
	return evs
}

// TestAppendBatchChains: a batch is numbered and chained like single
// appends, and the head names its last record.
func TestAppendBatchChains(t *testing.T) {
	l, path := openTemp(t)
	if _, err := l.Append(Event{Type: TypeClientConnected}); err != nil {
		t.Fatal(err)
	}
	h, err := l.AppendBatch(batchOf(50, "t"))
	if err != nil || h.Seq != 51 {
		t.Fatalf("AppendBatch: %+v %v", h, err)
	}
	if h2, err := l.AppendBatch(nil); err != nil || h2 != h {
		t.Fatalf("empty batch: %+v %v", h2, err)
	}
	rep := mustVerify(t, path)
	if rep.Records != 51 || rep.Last != h || len(rep.Warnings) != 0 {
		t.Fatalf("report: %+v", rep)
	}
	if fh, _, _ := ReadHead(HeadPath(path)); fh != h {
		t.Fatalf("head file %+v, want %+v", fh, h)
	}
}

// TestHeadBehindBatch: a writer that stopped between a batch and its head
// rewrite leaves the head many records behind; verify warns, and Open
// takes the chain back to the head and rewrites it.
func TestHeadBehindBatch(t *testing.T) {
	l, path := openTemp(t)
	l.AppendBatch(batchOf(3, "a"))
	old, err := os.ReadFile(HeadPath(path))
	if err != nil {
		t.Fatal(err)
	}
	l.AppendBatch(batchOf(40, "b"))
	l.Close()
	os.WriteFile(HeadPath(path), old, 0o600)
	rep := mustVerify(t, path)
	if len(rep.Warnings) != 1 || rep.Warnings[0].Kind != WarnHeadBehind {
		t.Fatalf("warnings: %v", rep.Warnings)
	}
	l, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if rs := l.Recoveries(); len(rs) != 1 || rs[0].Kind != RecoveredHead {
		t.Fatalf("recoveries: %v", rs)
	}
	if rep := mustVerify(t, path); len(rep.Warnings) != 0 {
		t.Fatalf("after Open: %v", rep.Warnings)
	}

	// A head that names a record the chain does not lead back to is not
	// a lagging head.
	l, _ = Open(path, nil)
	l.AppendBatch(batchOf(5, "c"))
	l.Close()
	os.WriteFile(HeadPath(path), []byte(`{"hash":"sha256:1111111111111111111111111111111111111111111111111111111111111111","seq":40,"v":1}`+"\n"), 0o600)
	if _, err := Open(path, nil); err == nil {
		t.Fatal("Open accepted a head the chain does not reach")
	}
}

// TestLogDeletedHeadKept: a log deleted while its head stays is a broken
// chain, not a log that cannot be read.
func TestLogDeletedHeadKept(t *testing.T) {
	path := writeLog(t, 3)
	os.Remove(path)
	rep, err := Verify(path, HeadPath(path))
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if rep.OK || len(rep.Problems) != 1 || rep.Problems[0].Kind != ProblemLogMissing {
		t.Fatalf("report: %+v", rep)
	}
	os.Remove(HeadPath(path))
	if _, err := Verify(path, HeadPath(path)); err == nil {
		t.Fatal("Verify of no log and no head succeeded")
	}
}

// BenchmarkAppendBatch appends tool_called records to a log on disk in
// groups of 1, 64 and 1,024: each group is one write, one fsync and one
// head rewrite. ns/op is per record.
func BenchmarkAppendBatch(b *testing.B) {
	for _, n := range []int{1, 64, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			l, _ := openTemp(b)
			evs := make([]Event, n)
			for i := range evs {
				evs[i] = Event{Type: TypeToolCalled, Epoch: "01JQ8Z5K2M7N4P6Q8R0S2T4V6W", Run: "01JQ8Z5K2M7N4P6Q8R0S2T4V6X",
					Fields: map[string]any{FieldTool: "echo", FieldArgsDigest: "hmac-sha256:9e4c0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7"}}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i += n {
				if _, err := l.AppendBatch(evs[:min(n, b.N-i)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOpenRefusesSymlink: a log that is a symbolic link (to a file the
// host's user may write elsewhere) is refused, not appended through.
func TestOpenRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := dir + "/elsewhere"
	os.WriteFile(target, nil, 0o600)
	path := dir + "/audit.jsonl"
	os.Symlink(target, path)
	if _, err := Open(path, nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Open of a symlinked log: %v", err)
	}
	if b, _ := os.ReadFile(target); len(b) != 0 {
		t.Fatalf("wrote through the link: %q", b)
	}
}
