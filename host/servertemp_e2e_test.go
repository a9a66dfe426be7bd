package host_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// tmpProject is a project of its own whose server is
// testdata/servers/python/tmpdir.py, its tools exempt.
func tmpProject(t *testing.T) *project {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.Missing(t, "python3 is not on PATH: install Python 3 to run this test")
	}
	p := newProject(t, nil)
	p.write("srv.py", testenv.PythonServer(t, "tmpdir"))
	p.write("mcpepoch.toml", "command = [\"python3\", \"srv.py\"]\n\n[grants]\nexempt = [\"**\"]\n")
	return p
}

// startTmpServer starts a host of a tmpProject and returns it initialized
// with its server's TMPDIR.
func startTmpServer(t *testing.T) (*raw, string) {
	t.Helper()
	c := startRaw(t, tmpProject(t), nil, "python3", "srv.py")
	c.initialize()
	r := c.callWait("tmp", nil)
	tmp, ok := strings.CutPrefix(r.text(), "TMPDIR=")
	if !ok || tmp == "" {
		t.Fatalf("the server's TMPDIR: %q", r.text())
	}
	return c, tmp
}

// The server gets a TMPDIR of its own, in the user's state directory,
// which a sandboxed agent cannot write (the shared temporary directory it
// can: a tool that caches compiled code there, tsx, would run the
// agent's), mode 0700, and removed once the server exits.
func TestServerTempOfItsOwn(t *testing.T) {
	t.Parallel()
	c, tmp := startTmpServer(t)
	state, err := layout.StateHome() // the tests' XDG_STATE_HOME, which the host inherited
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(filepath.Dir(tmp)) != state {
		t.Errorf("the server's TMPDIR is %s, want a directory under %s", tmp, state)
	}
	fi, err := os.Stat(tmp)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the server's TMPDIR %s: %v, mode %v; want a directory of mode 0700", tmp, err, fi.Mode())
	}
	c.stdin.Close() // the client goes: the host stops the server and exits
	select {
	case <-c.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the host did not exit after its client closed stdin")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(tmp); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's TMPDIR %s is still there after the host stopped it", tmp)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := os.Stat(tmp + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the lock beside the server's TMPDIR, %s.lock, is still there after the host stopped it (%v)", tmp, err)
	}
}

// A host killed (SIGKILL) cannot remove its server's TMPDIR; the next host
// start of any project does, since the killed host's lock on it is gone,
// and leaves alone the TMPDIR of a host still running.
func TestServerTempOfAKilledHostSwept(t *testing.T) {
	t.Parallel()
	killed, killedTmp := startTmpServer(t)
	_, liveTmp := startTmpServer(t)
	killed.cmd.Process.Kill()
	select {
	case <-killed.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the killed host did not exit")
	}
	if _, err := os.Stat(killedTmp); err != nil {
		t.Fatalf("the killed host's TMPDIR %s: %v; want it left behind, the case swept", killedTmp, err)
	}
	// What the sweep must leave: a lock file named for no TMPDIR of
	// ours (".lock" alone would name the parent itself) and a directory
	// beside it.
	state, err := layout.StateHome()
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(state, "t")
	for _, f := range []string{".lock", "notours.lock"} {
		if err := os.WriteFile(filepath.Join(parent, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(parent, "notours"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, newTmp := startTmpServer(t) // its start sweeps, in the background
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(killedTmp)
		if os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed host's TMPDIR %s is still there 10 s after another host started (%v)", killedTmp, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(killedTmp + ".lock"); !os.IsNotExist(err) {
		t.Errorf("the killed host's TMPDIR lock %s.lock is still there after another host started (%v)", killedTmp, err)
	}
	for _, d := range []string{liveTmp, newTmp, filepath.Join(parent, "notours")} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			t.Errorf("%s after the sweep: %v; want it kept", d, err)
		}
	}
}

// Without a TMPDIR of its own the host starts no server: the shared one
// is an agent's to write. Here the state directory's t is a file, so no
// directory can be made in it; or a symbolic link to a directory others
// may write, as a shared one is.
func TestServerTempRequired(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		make func(t *testing.T, path string) error
	}{
		{"file", func(t *testing.T, path string) error { return os.WriteFile(path, nil, 0o600) }},
		{"symlink", func(t *testing.T, path string) error {
			shared := t.TempDir()
			os.Chmod(shared, 0o777)
			return os.Symlink(shared, path)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			if err := os.MkdirAll(filepath.Join(state, "mcpepoch"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := c.make(t, filepath.Join(state, "mcpepoch", "t")); err != nil {
				t.Fatal(err)
			}
			h := startRawEnv(t, tmpProject(t), []string{"XDG_STATE_HOME=" + state}, nil, "python3", "srv.py")
			select {
			case <-h.done: // a first start that fails ends the host, as a command that cannot run does
			case <-time.After(15 * time.Second):
				t.Fatal("the host still runs 15 s after a start it could give no TMPDIR of its own")
			}
			if err := h.stderr.String(); strings.Contains(err, "started pid") || !strings.Contains(err, "no TMPDIR of its own") || !strings.Contains(err, filepath.Join(state, "mcpepoch", "t")) {
				t.Errorf("the host's log does not name the TMPDIR it could not make:\n%s", err)
			}
		})
	}
}
