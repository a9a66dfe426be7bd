package audit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a writer process: with AUDIT_TEST_CHILD set,
// TestMain runs the writer instead of the tests.
const (
	childEnv    = "AUDIT_TEST_CHILD"  // "loop", "count" or "full"
	childLog    = "AUDIT_TEST_LOG"    // log path
	childN      = "AUDIT_TEST_N"      // records to append ("count")
	childWriter = "AUDIT_TEST_WRITER" // writer name, in each record
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		if err := runChild(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild opens the log and appends records. "loop" appends until killed,
// every other record padded to 768 KiB so that a kill can land inside a
// write. "count" prints "ready", waits for a line on stdin, appends N
// records and exits.
func runChild(mode string) error {
	l, err := Open(os.Getenv(childLog), nil)
	if err != nil {
		return err
	}
	defer l.Close()
	writer := os.Getenv(childWriter)
	switch mode {
	case "loop":
		for i := 0; ; i++ {
			f := map[string]any{"writer": writer, "i": i, FieldTool: "echo"}
			if i%2 == 1 {
				f["pad"] = strings.Repeat("p", 768<<10)
			}
			if _, err := l.Append(Event{Type: TypeToolCalled, Epoch: "01JQLOOP", Fields: f}); err != nil {
				return err
			}
		}
	case "full":
		return runFullChild(l)
	case "count":
		n, err := strconv.Atoi(os.Getenv(childN))
		if err != nil {
			return err
		}
		fmt.Println("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return err
		}
		for i := range n {
			_, err := l.Append(Event{Type: TypeToolCalled, Epoch: "01JQ" + writer,
				Fields: map[string]any{"writer": writer, "i": i}})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown mode %q", mode)
}

func childCmd(mode, path, writer string, n int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childLog+"="+path,
		childWriter+"="+writer, childN+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	return cmd
}

// midRecord reports whether the file at path ends inside a line.
func midRecord(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return false
	}
	var b [1]byte
	_, err = f.ReadAt(b[:], fi.Size()-1)
	return err == nil && b[0] != '\n'
}

// countLines returns the number of newlines in the file at path.
func countLines(path string) int {
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}

// TestCrashKill kills a writer process with SIGKILL while it appends, six
// times over, then appends from this process: after every kill the log
// verifies up to its last complete record, and the next writer continues the
// chain.
func TestCrashKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writer processes")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	torn := 0
	for round := range 6 {
		before := countLines(path)
		cmd := childCmd("loop", path, fmt.Sprint("w", round), 0)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for countLines(path) < before+4 {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("round %d: writer appended %d records in 60s", round, countLines(path)-before)
			}
			time.Sleep(2 * time.Millisecond)
		}
		// Kill while a record is half in the file if that can be caught
		// within half a second (odd rounds), else at a varying point of the
		// writer's cycle.
		if round%2 == 1 {
			for end := time.Now().Add(500 * time.Millisecond); time.Now().Before(end) && !midRecord(path); {
			}
		} else {
			time.Sleep(time.Duration(rand.IntN(20_000)) * time.Microsecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != -1 {
			t.Fatalf("round %d: writer did not die by the signal: %v", round, err)
		}

		rep := mustVerify(t, path)
		tornNow := false
		for _, w := range rep.Warnings {
			switch w.Kind {
			case WarnTornTail:
				tornNow = true
			case WarnHeadBehind, WarnMissingNewline, WarnTornRecovered:
			default:
				t.Errorf("round %d: unexpected warning %v", round, w)
			}
		}
		if tornNow {
			torn++
		}
		t.Logf("round %d: %d records after the kill, warnings: %v", round, rep.Records, findings(rep.Warnings))
	}
	t.Logf("%d of 6 kills left a torn tail", torn)

	before := verify(t, path)
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range l.Recoveries() {
		t.Logf("recovery: %v", r)
	}
	if h := l.Head(); h.Seq < before.Last.Seq || h.Seq > before.Last.Seq+1 {
		t.Fatalf("after Open the head is %+v; the log ended at %+v", h, before.Last)
	}
	for range 3 {
		if _, err := l.Append(Event{Type: TypeClientConnected}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()

	rep := mustVerify(t, path)
	for _, w := range rep.Warnings {
		if w.Kind != WarnTornRecovered {
			t.Errorf("after recovery: unexpected warning %v", w)
		}
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	recovered := 0
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d", i+1, r.Seq)
		}
		if r.Type == TypeLogRecovered {
			recovered++
		}
	}
	if recovered != torn {
		t.Fatalf("%d torn tails, %d log_recovered records", torn, recovered)
	}
	if n := len(recs); recs[n-1].Type != TypeClientConnected || recs[n-4].Type == TypeClientConnected {
		t.Fatalf("the last three records are not this process's")
	}
}

// TestConcurrentProcesses has two processes append 200 records each to one
// log at the same time.
func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writer processes")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const n = 200
	var (
		cmds  []*exec.Cmd
		gos   []io.WriteCloser
		ready []*bufio.Reader
	)
	for _, w := range []string{"A", "B"} {
		cmd := childCmd("count", path, w, n)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		cmds, gos, ready = append(cmds, cmd), append(gos, stdin), append(ready, bufio.NewReader(stdout))
	}
	for _, r := range ready {
		if line, err := r.ReadString('\n'); line != "ready\n" {
			t.Fatalf("writer said %q, %v", line, err)
		}
	}
	for _, g := range gos {
		io.WriteString(g, "go\n")
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}

	rep := mustVerify(t, path)
	if rep.Records != 2*n || rep.Last.Seq != 2*n || len(rep.Warnings) > 0 {
		t.Fatalf("report: %d records, last %d, warnings %v", rep.Records, rep.Last.Seq, rep.Warnings)
	}
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]int64{}
	switches := 0
	for i, r := range recs {
		if r.Seq != int64(i+1) {
			t.Fatalf("line %d has seq %d", i+1, r.Seq)
		}
		w := r.Fields["writer"].(string)
		if got := r.Fields["i"].(fmt.Stringer).String(); got != fmt.Sprint(next[w]) {
			t.Fatalf("writer %s: record %s after %d", w, got, next[w]-1)
		}
		next[w]++
		if i > 0 && recs[i-1].Fields["writer"] != w {
			switches++
		}
	}
	if next["A"] != n || next["B"] != n {
		t.Fatalf("records per writer: %v", next)
	}
	t.Logf("writers alternated %d times", switches)
}

// TestConcurrentLogs has two Logs of one process, each used by two
// goroutines, append to the same file.
func TestConcurrentLogs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	var logs [2]*Log
	for i := range logs {
		l, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		logs[i] = l
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for range 25 {
				if _, err := logs[g%2].Append(Event{Type: TypeToolResult, Fields: map[string]any{"g": g}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	rep := mustVerify(t, path)
	if rep.Records != 100 || len(rep.Warnings) > 0 {
		t.Fatalf("%d records, warnings %v", rep.Records, rep.Warnings)
	}
}
