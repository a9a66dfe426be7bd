package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

func identity(t *testing.T, dir, entry string) *build.Identity {
	t.Helper()
	id, err := build.Compute(build.Spec{Dir: dir, Entry: entry, Lockfiles: []string{}, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestWriteReadRoundTripAndChanged(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "server.bin"), []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := layout.Manifest(dir)
	first := New("lbl", "01JQ7R9KQ6K2Y8W4JH0M3T5V7X", time.Now(), 0, identity(t, dir, "server.bin"), nil)
	if err := Write(p, first); err != nil {
		t.Fatal(err)
	}
	got, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if got.Label != "lbl" || len(got.Artifacts) != 2 || got.Artifacts[0].Digest != build.DigestBytes([]byte("v1")) {
		t.Fatalf("read back %+v", got)
	}
	if c := got.Changed(); len(c) != 1 || c[0] != "server.bin" {
		t.Errorf("first build: changed = %v, want server.bin once (it is entry and runtime)", c)
	}
	for _, a := range got.Artifacts {
		if !a.Changed {
			t.Errorf("first build: %s %s not marked changed", a.Role, a.Path)
		}
	}
	same := New("lbl", "01JQ7R9KQ6K2Y8W4JH0M3T5V7Y", time.Now(), 0, identity(t, dir, "server.bin"), got)
	if c := same.Changed(); len(c) != 0 {
		t.Errorf("identical rebuild: changed = %v, want none", c)
	}
	os.WriteFile(filepath.Join(dir, "server.bin"), []byte("v2"), 0o755)
	next := New("lbl", "01JQ7R9KQ6K2Y8W4JH0M3T5V7Z", time.Now(), 0, identity(t, dir, "server.bin"), got)
	if c := next.Changed(); len(c) != 1 || c[0] != "server.bin" {
		t.Errorf("after edit: changed = %v, want server.bin", c)
	}
}

func TestReadCorruptNamesFileAndField(t *testing.T) {
	dir := t.TempDir()
	p := layout.Manifest(dir)
	os.MkdirAll(filepath.Dir(p), 0o700)
	for _, tc := range []struct{ text, field string }{
		{"schema = 1\n[build\n", ""},
		{"schema = 2\n", "schema"},
		{"schema = 1\n[build]\nid = \"x\"\nstatus = \"maybe\"\n", "build.status"},
		{"schema = 1\n[build]\nid = \"x\"\nstatus = \"ok\"\n[[artifact]]\nrole = \"entry\"\npath = \"a\"\ndigest = \"md5:00\"\n", "artifact[0].digest"},
		{"schema = 1\nsurprise = true\n[build]\nid = \"x\"\nstatus = \"ok\"\n", "surprise"},
	} {
		os.WriteFile(p, []byte(tc.text), 0o644)
		_, err := Read(p)
		var ce *CorruptError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: err = %v, want *CorruptError on field %q naming %s", tc.text, err, tc.field, p)
		}
		if b, _ := os.ReadFile(p); string(b) != tc.text {
			t.Errorf("Read changed the file")
		}
	}
	os.Remove(p)
	if _, err := Read(p); !IsNotExist(err) {
		t.Errorf("missing manifest: err = %v, want not-exist", err)
	}
}

func TestLockSerializesWriters(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	inside := 0
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock, err := Lock(dir)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			if inside != 1 {
				t.Errorf("%d holders of the lock at once", inside)
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
}

// TestReadAgainIsACopy: reading the same manifest twice gives two Files
// that share nothing (the second read takes the first's decoding, and a
// caller changing its File does not change what the next reader gets),
// and a manifest rewritten in between is decoded anew.
func TestReadAgainIsACopy(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "server.bin"), []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := layout.Manifest(dir)
	first := New("lbl", "01JQ7R9KQ6K2Y8W4JH0M3T5V7X", time.Now(), 0, identity(t, dir, "server.bin"), nil)
	first.Command, first.Inferred = []string{"./server.bin"}, []string{"entry server.bin"}
	if err := Write(p, first); err != nil {
		t.Fatal(err)
	}
	failed := New("lbl", "01JQ7R9KQ6K2Y8W4JH0M3T5V7Y", time.Now(), 1, identity(t, dir, "server.bin"), first)
	failed.Command, failed.Inferred = first.Command, first.Inferred
	if err := Write(p, failed); err != nil {
		t.Fatal(err)
	}
	a, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if a.LastOK == nil || len(a.LastOK.Artifacts) == 0 {
		t.Fatalf("a failed build's manifest keeps no last_ok: %+v", a)
	}
	a.Label, a.Command[0], a.Inferred[0], a.Artifacts[0].Path, a.LastOK.Artifacts[0].Path, a.LastOK.ID = "x", "x", "x", "x", "x", "x"
	b, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	if b.Label != "lbl" || b.Command[0] != "./server.bin" || b.Inferred[0] != "entry server.bin" ||
		b.Artifacts[0].Path != "server.bin" || b.LastOK.Artifacts[0].Path != "server.bin" || b.LastOK.ID != first.Build.ID {
		t.Errorf("a second read shows the first reader's changes: %+v, last_ok %+v", b, b.LastOK)
	}
	next := New("lbl2", "01JQ7R9KQ6K2Y8W4JH0M3T5V7Z", time.Now(), 0, identity(t, dir, "server.bin"), b)
	if err := Write(p, next); err != nil {
		t.Fatal(err)
	}
	if c, err := Read(p); err != nil || c.Label != "lbl2" || c.Build.ID != next.Build.ID {
		t.Errorf("read after a rewrite: %+v, %v; want the new manifest", c, err)
	}
}
