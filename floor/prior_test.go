package floor

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/audit/audittest"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// smallProject returns a project directory whose audit log has a few
// thousand records with pinEvents spread over them.
func smallProject(t *testing.T) (dir, log string) {
	dir = t.TempDir()
	log = layout.Audit(dir)
	if err := os.MkdirAll(filepath.Dir(log), 0o700); err != nil {
		t.Fatal(err)
	}
	audittest.WriteLog(t, log, 3000, pinEvents()...)
	return dir, log
}

// onePassAgrees fails t unless readPrior reads in one pass what
// readPriorPin and lastHeldFloor read each on its own, and returns them.
func onePassAgrees(t *testing.T, dir string) (priorPin, string) {
	t.Helper()
	p, held := readPrior(dir, true)
	alone, heldAlone := readPriorPin(dir), LastHeld(dir)
	if !reflect.DeepEqual(p, alone) || !reflect.DeepEqual(held, heldAlone) {
		t.Fatalf("one pass: %+v, %+v; apart: %+v, %+v", p, held, alone, heldAlone)
	}
	pr := ReadPrior(dir)
	if !reflect.DeepEqual(pr.PinnedRoots(), p.roots) || pr.LastHeldFloor() != nil && !reflect.DeepEqual(*pr.LastHeldFloor(), *held) {
		t.Fatalf("ReadPrior: %v, %+v", pr.PinnedRoots(), pr.LastHeldFloor())
	}
	if held == nil {
		return p, ""
	}
	return p, held.UpdatedBy
}

// TestReadPriorOnePass: a host start that needs both the earlier hosts'
// pins and the last floor held reads the log once, and finds what the two
// reads found: on an intact log, on one with a line that is not a record
// (the strict view of the pins; the floor from the lines as they are),
// and with lines that only the floor's byte scan looks at.
func TestReadPriorOnePass(t *testing.T) {
	dir, log := smallProject(t)
	p, held := onePassAgrees(t, dir)
	if !p.hadFloor || !p.hadRoot || !reflect.DeepEqual(p.roots, []string{"root-a", "root-b"}) || p.rootDigest != "sha256:root-b" || held != "held-last" {
		t.Fatalf("intact log: %+v, floor by %q", p, held)
	}

	// A torn tail (no newline) that names a floor: not a record, and not
	// an error for the pins; the floor's scan takes it.
	tail := `{"type":"policy_floor_held","floor":{"v":1,"root":"/x","updatedBy":"torn-tail"}}`
	appendTo(t, log, tail)
	p, held = onePassAgrees(t, dir)
	if !reflect.DeepEqual(p.roots, []string{"root-a", "root-b"}) || held != "torn-tail" {
		t.Fatalf("torn tail: %+v, floor by %q", p, held)
	}

	// The same line ended, and a record after it (a copy of the first,
	// appended by hand): a line that is not a record, and no
	// log_recovered record names it, so the pins take the strict view.
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, log, "\n"+string(b[:strings.IndexByte(string(b), '\n')+1]))
	appendTo(t, log, `{"type":"trust_pinned","floor":{"v":1,"updatedBy":"after-fault"}}`+"\n")
	p, held = onePassAgrees(t, dir)
	if !p.hadFloor || !p.hadRoot || p.roots != nil || held != "after-fault" {
		t.Fatalf("line not a record: %+v, floor by %q", p, held)
	}

	// A line longer than any record is passed over by the floor's scan.
	long := `{"type":"trust_pinned","floor":{"v":1,"updatedBy":"too-long"},"pad":"` + strings.Repeat("p", audit.MaxRecordSize) + `"}` + "\n"
	appendTo(t, log, long)
	if _, held = onePassAgrees(t, dir); held != "after-fault" {
		t.Fatalf("long line: floor by %q", held)
	}

	if p, held := onePassAgrees(t, t.TempDir()); !reflect.DeepEqual(p, priorPin{}) || held != "" {
		t.Fatalf("no log: %+v, floor by %q", p, held)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// FuzzNamesFloor: namesFloor finds the members heldFloor looks for
// exactly where a search for each would.
func FuzzNamesFloor(f *testing.F) {
	for _, s := range []string{`{"type":"trust_pinned"}`, `"type":"type":"trust_pinned"`, `"type":"policy_floor_held`,
		`x"type":"policy_floor_held""type":"`, `"type":"trust_pinned_x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		want := bytes.Contains(line, []byte(`"type":"trust_pinned"`)) || bytes.Contains(line, []byte(`"type":"policy_floor_held"`))
		if got := namesFloor(line); got != want {
			t.Fatalf("namesFloor(%q) = %v, want %v", line, got, want)
		}
	})
}
