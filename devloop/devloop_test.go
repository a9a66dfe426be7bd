package devloop

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// The tests drive real builds through the go-task and make CLIs: the
// regressions of go-task's own watch mode (see the package doc).

// buildScript writes out/state (the source's content and the list of
// sources) by rename, appends to builds.log (neither is a source, and both
// change during every build), and sleeps 3 s first when the source says
// "slow", 300 s when it says "hang" (a build only a cancel ends), after
// writing .hanging: a test saves only once the build has read the old
// source (at a load of 30 a save right after build_started came before
// the build's grep, which then read the new one). It writes its process
// group to .pgid.
const buildScript = `ps -o pgid= -p $$ | tr -d ' ' > .pgid
if grep -q slow src/a.txt; then sleep 3; fi
if grep -q hang src/a.txt; then touch .hanging; sleep 300; fi
mkdir -p out
{ cat src/a.txt; find src -type f | sort; } > out/state.tmp && mv out/state.tmp out/state
echo built >> builds.log
`

type harness struct {
	t      *testing.T
	dir    string
	cancel context.CancelFunc
	done   chan error

	mu      sync.Mutex
	events  []Event
	records []string // "exit:state" for every recorded build
}

// start runs the loop on a new project whose build is buildScript, run by
// runner ("task" or "make"), and whose source src/a.txt holds first.
func start(t *testing.T, runner, first string) *harness {
	t.Helper()
	if _, err := exec.LookPath("ps"); err != nil {
		testenv.Missing(t, "ps is not on PATH")
	}
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, done: make(chan error, 1)}
	h.write("build.sh", buildScript)
	h.write("Taskfile.yml", "version: '3'\ntasks:\n  build:\n    cmds:\n      - sh build.sh\n")
	h.write("Makefile", "build:\n\tsh build.sh\n")
	h.write("src/a.txt", first)
	var argv []string
	switch runner {
	case "task":
		argv = []string{testenv.Task(t), "--exit-code", "build"}
	case "make":
		mk, err := exec.LookPath("make")
		if err != nil {
			testenv.Missing(t, "make is not on PATH")
		}
		argv = []string{mk, "build"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	o := Options{Root: dir, Watch: []string{"src/**/*"}, Build: argv, Debounce: 150 * time.Millisecond, Grace: 2 * time.Second,
		Event: func(e Event) { h.mu.Lock(); h.events = append(h.events, e); h.mu.Unlock() },
		Record: func(_ context.Context, code int) {
			b, _ := os.ReadFile(filepath.Join(dir, "out", "state"))
			h.mu.Lock()
			h.records = append(h.records, fmt.Sprintf("%d:%s", code, b))
			h.mu.Unlock()
		}}
	go func() { h.done <- Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return 10 s after its context ended")
		}
	})
	return h
}

func (h *harness) write(rel, content string) {
	h.t.Helper()
	p := filepath.Join(h.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// save replaces rel by writing a temporary file and renaming it over rel,
// as sed -i and many editors do.
func (h *harness) save(rel, content string) {
	h.t.Helper()
	tmp := filepath.Join(h.dir, rel+".swp~")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.dir, rel)); err != nil {
		h.t.Fatal(err)
	}
}

// waitFor waits up to 20 s for cond on what was recorded and seen.
func (h *harness) waitFor(what string, cond func(records []string, events []Event) bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		ok := cond(h.records, h.events)
		h.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t.Fatalf("waiting for %s: records %q\nevents %s", what, h.records, eventTypes(h.events))
}

// settle waits until nothing happened for quiet, then checks that builds
// never overlapped, and returns the records.
func (h *harness) settle(quiet time.Duration) []string {
	h.t.Helper()
	n := -1
	for {
		h.mu.Lock()
		m := len(h.events)
		h.mu.Unlock()
		if m == n {
			break
		}
		n = m
		time.Sleep(quiet)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	running := false
	for _, e := range h.events {
		switch e.Type {
		case "build_started":
			if running {
				h.t.Errorf("a build started while another ran: %s", eventTypes(h.events))
			}
			running = true
		case "build_finished", "build_cancelled":
			running = false
		}
	}
	return append([]string(nil), h.records...)
}

func eventTypes(es []Event) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Type+fmt.Sprint(e.Paths))
	}
	return strings.Join(s, " ")
}

func count(es []Event, typ string) int {
	n := 0
	for _, e := range es {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func recorded(want string) func([]string, []Event) bool {
	return func(r []string, _ []Event) bool { return len(r) > 0 && strings.HasPrefix(r[len(r)-1], want) }
}

// pgid is the process group of the last build that started, once its
// script has written it (the script's first line; on a loaded machine
// that can come well after build_started).
// waitFile waits up to 20 s for the build to write rel.
func (h *harness) waitFile(rel string) {
	h.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(h.dir, rel)); err == nil {
			return
		}
	}
	h.t.Fatalf("the build wrote no %s within 20s", rel)
}

func (h *harness) pgid() int {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(h.dir, ".pgid"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			h.t.Fatal(err)
		}
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the build wrote no process group to .pgid within 20s (read %q)", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func groupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		gone, detail := testenv.GroupGone(pgid)
		if gone {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the build's process group %d is still there: %s", pgid, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Writes to files that are not sources during a build (the build's own
// output, a log) neither cancel it nor start another.
func TestNonSourceWriteDuringBuild(t *testing.T) {
	t.Parallel()
	h := start(t, "task", "slow 1\n")
	h.waitFor("the build to start", func(_ []string, es []Event) bool { return count(es, "build_started") == 1 })
	time.Sleep(300 * time.Millisecond)
	h.write("notes.txt", "a note\n")
	h.write("out/junk", "x\n")
	h.write("src.txt", "not under src/\n")
	h.waitFor("the build", recorded("0:slow 1"))
	records := h.settle(time.Second)
	if len(records) != 1 || count(h.events, "build_cancelled") != 0 {
		t.Errorf("records %q, events %s: want one build, not cancelled", records, eventTypes(h.events))
	}
}

// Three saves by rename 0.3 s apart end with one complete build of the
// last state, recorded last.
func TestRenameSavesEndWithLastState(t *testing.T) {
	t.Parallel()
	for _, runner := range []string{"task", "make"} {
		t.Run(runner, func(t *testing.T) {
			h := start(t, runner, "v0\n")
			h.waitFor("the first build", recorded("0:v0"))
			for _, v := range []string{"v1", "v2", "v3"} {
				h.save("src/a.txt", v+"\n")
				time.Sleep(300 * time.Millisecond)
			}
			h.waitFor("a build of v3", recorded("0:v3"))
			records := h.settle(time.Second)
			if last := records[len(records)-1]; !strings.HasPrefix(last, "0:v3\n") {
				t.Errorf("last record %q, want v3", last)
			}
			if strings.Contains(strings.Join(records, ""), ".swp~") {
				t.Errorf("a build saw an editor's temporary file: %q", records)
			}
		})
	}
}

// A new directory is watched at once: a source created in it, together
// with the directory, starts a build that sees it.
func TestNewDirectoryWithSource(t *testing.T) {
	t.Parallel()
	h := start(t, "task", "v0\n")
	h.waitFor("the first build", recorded("0:v0"))
	if err := os.MkdirAll(filepath.Join(h.dir, "src", "new", "deeper"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.write("src/new/deeper/b.txt", "b\n")
	h.waitFor("a build that sees b.txt", func(r []string, _ []Event) bool {
		return len(r) > 1 && strings.Contains(r[len(r)-1], "src/new/deeper/b.txt")
	})
	time.Sleep(200 * time.Millisecond)
	h.write("src/new/deeper/c.txt", "c\n")
	h.waitFor("a build that sees c.txt", func(r []string, _ []Event) bool {
		return strings.Contains(r[len(r)-1], "src/new/deeper/c.txt")
	})
}

// A change during a long build cancels it as a whole process group, and
// the build of the new state is the one recorded.
func TestLongBuildCancelled(t *testing.T) {
	t.Parallel()
	h := start(t, "task", "hang\n")
	h.waitFor("the slow build to start", func(_ []string, es []Event) bool { return count(es, "build_started") == 1 })
	slow := h.pgid()
	h.waitFile(".hanging")
	h.save("src/a.txt", "fast\n")
	h.waitFor("the fast build", recorded("0:fast"))
	groupGone(t, slow)
	records := h.settle(time.Second)
	if len(records) != 1 || count(h.events, "build_cancelled") != 1 {
		t.Errorf("records %q, events %s: want the slow build cancelled and only the fast one recorded", records, eventTypes(h.events))
	}
}

// Stopping the loop during a build (what Ctrl-C does to mcpepoch dev)
// returns only once the build's whole process group is gone, and records
// nothing.
func TestInterruptDuringBuild(t *testing.T) {
	t.Parallel()
	for _, runner := range []string{"task", "make"} {
		t.Run(runner, func(t *testing.T) {
			h := start(t, runner, "hang\n")
			h.waitFor("the build to start", func(_ []string, es []Event) bool { return count(es, "build_started") == 1 })
			pgid := h.pgid()
			h.cancel()
			select {
			case err := <-h.done:
				if err != nil {
					t.Fatal(err)
				}
				h.done <- nil
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return 5 s after its context ended")
			}
			if gone, detail := testenv.GroupGone(pgid); !gone {
				t.Errorf("Run returned with the build's group %d still there: %s", pgid, detail)
			}
			if h.settle(300 * time.Millisecond); len(h.records) != 0 {
				t.Errorf("records %q after an interrupted build", h.records)
			}
		})
	}
}
