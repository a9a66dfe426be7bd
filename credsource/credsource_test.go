package credsource

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
)

// planted is a secret value no error or description may contain.
const planted = "s3cr3t-planted-9f2c"

func newSet(t *testing.T, root string, creds map[string]config.Credential, environ ...string) *Set {
	t.Helper()
	s, err := New(root, creds, environ)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wantRefused checks that reading scope fails with an *Error naming the
// scope and saying why, without the planted value.
func wantRefused(t *testing.T, s *Set, scope, why string) {
	t.Helper()
	v, err := s.Source(scope).Read(context.Background())
	var se *Error
	if !errors.As(err, &se) || se.Scope != scope {
		t.Fatalf("%s: Read = %q, %v; want *Error for the scope", scope, v, err)
	}
	if !strings.Contains(err.Error(), why) {
		t.Errorf("%s: %v, want it to say %q", scope, err, why)
	}
	if strings.Contains(err.Error(), planted) || v != "" {
		t.Errorf("%s: the value leaked: %q, %v", scope, v, err)
	}
}

func read(t *testing.T, s *Set, scope string) string {
	t.Helper()
	v, err := s.Source(scope).Read(context.Background())
	if err != nil {
		t.Fatalf("%s: %v", scope, err)
	}
	return v
}

func TestEnvIsCapturedAndStripped(t *testing.T) {
	s := newSet(t, t.TempDir(), map[string]config.Credential{
		"a": {Env: "A_TOKEN"}, "gone": {Env: "NOT_SET"},
	}, "PATH=/bin", "A_TOKEN=  "+planted+"\n", "HOME=/h")
	if v := read(t, s, "a"); v != planted {
		t.Errorf("a = %q", v)
	}
	wantRefused(t, s, "gone", "not set when the host started")
	if err := s.Source("gone").Check(); err == nil {
		t.Error("Check of an unset variable passed")
	}
	if got := s.Strip([]string{"PATH=/bin", "A_TOKEN=" + planted, "HOME=/h"}); !slices.Equal(got, []string{"PATH=/bin", "HOME=/h"}) {
		t.Errorf("Strip = %q", got)
	}
}

// secretFile writes content to a file outside the project with mode.
func secretFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFileSource(t *testing.T) {
	root := t.TempDir()
	good := secretFile(t, planted+"\n", 0o600)
	inside := filepath.Join(root, "token")
	os.WriteFile(inside, []byte(planted), 0o600)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(inside, link)
	s := newSet(t, root, map[string]config.Credential{
		"good":    {File: good},
		"open":    {File: secretFile(t, planted, 0o644)},
		"group":   {File: secretFile(t, planted, 0o640)},
		"missing": {File: filepath.Join(t.TempDir(), "none")},
		"empty":   {File: secretFile(t, " \n", 0o600)},
		"inside":  {File: link},
		"big":     {File: secretFile(t, strings.Repeat("x", MaxSecret+1), 0o600)},
		"dir":     {File: t.TempDir()},
	})
	if v := read(t, s, "good"); v != planted {
		t.Errorf("good = %q", v)
	}
	if err := s.Source("good").Check(); err != nil {
		t.Errorf("Check(good) = %v", err)
	}
	wantRefused(t, s, "open", "mode 0644")
	wantRefused(t, s, "group", "mode 0640")
	wantRefused(t, s, "missing", "does not exist")
	wantRefused(t, s, "empty", "empty")
	wantRefused(t, s, "inside", "inside the project")
	wantRefused(t, s, "big", "larger than")
	wantRefused(t, s, "dir", "not a regular file")
	for _, scope := range []string{"open", "missing", "inside", "dir"} {
		if err := s.Source(scope).Check(); err == nil {
			t.Errorf("Check(%s) passed", scope)
		}
	}
}

func TestFileOwnedByAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root")
	}
	p := secretFile(t, planted, 0o600)
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	s := newSet(t, t.TempDir(), map[string]config.Credential{"x": {File: p}})
	wantRefused(t, s, "x", "owned by uid 65534")
}

func TestCommandSource(t *testing.T) {
	root := t.TempDir()
	val := secretFile(t, planted, 0o600) // so that the value is not in the command line
	s := newSet(t, root, map[string]config.Credential{
		"ok":     {Command: []string{"sh", "-c", "printf '  %s\\n\\n' \"$(cat " + val + ")\"; echo noise >&2"}},
		"pwd":    {Command: []string{"sh", "-c", "pwd"}},
		"fails":  {Command: []string{"sh", "-c", "cat " + val + "; cat " + val + " >&2; exit 3"}},
		"none":   {Command: []string{"no-such-program-here"}},
		"big":    {Command: []string{"sh", "-c", "head -c 70000 /dev/zero | tr '\\0' x"}},
		"silent": {Command: []string{"true"}},
	})
	if v := read(t, s, "ok"); v != planted {
		t.Errorf("ok = %q", v)
	}
	if v := read(t, s, "pwd"); v != root && v != realDir(root) {
		t.Errorf("the command ran in %q, want the project root %q", v, root)
	}
	wantRefused(t, s, "fails", "exit status 3")
	wantRefused(t, s, "none", "program not found")
	wantRefused(t, s, "big", "more than 64 KiB")
	wantRefused(t, s, "silent", "empty")
	if err := s.Source("none").Check(); err == nil {
		t.Error("Check of a missing program passed")
	}
	if err := s.Source("ok").Check(); err != nil {
		t.Errorf("Check(ok) = %v", err)
	}
}

func TestCommandIsBoundedByItsContext(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := newSet(t, t.TempDir(), map[string]config.Credential{
		// The grandchild keeps stdout open: the whole group must go.
		"slow": {Command: []string{"sh", "-c", "sleep 60 & echo $! > " + pidFile + "; wait"}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := s.Source("slow").Read(ctx)
	if err == nil || !strings.Contains(err.Error(), "did not finish in time") {
		t.Errorf("Read = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Read returned after %s", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// Signal 0 finds a zombie too; its state in /proc tells it apart.
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") || pid <= 1 {
			break
		}
		if runtime.GOOS != "linux" || time.Now().After(deadline) {
			if runtime.GOOS == "linux" {
				t.Errorf("the command's own child %d outlived the timeout", pid)
			}
			break
		}
	}
}

func TestNoSource(t *testing.T) {
	s := newSet(t, t.TempDir(), map[string]config.Credential{"bare": {Tools: []string{"x"}}})
	wantRefused(t, s, "bare", "no source")
	if s.Source("undeclared") != nil {
		t.Error("an undeclared scope has a source")
	}
	if got := s.Scopes(); !slices.Equal(got, []string{"bare"}) {
		t.Errorf("Scopes = %q", got)
	}
}
