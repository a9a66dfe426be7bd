package main

// SIGTERM and SIGINT stop record and identity while they hash, even a file
// that takes minutes to read (a 64 GiB sparse lockfile), and record leaves
// the run manifest as it was. Files that are not regular (a FIFO, a device)
// are refused before any read.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// interruptBound is how long a signalled command may take to exit.
const interruptBound = 10 * time.Second

func TestInterruptWhileHashing(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	for _, tc := range []struct {
		name     string
		args     []string
		sig      syscall.Signal
		manifest bool // a manifest exists and must stay as it was
	}{
		{name: "record SIGTERM", args: []string{"record", "--lockfile", "big.lock"}, sig: syscall.SIGTERM, manifest: true},
		{name: "record SIGINT", args: []string{"record", "--lockfile", "big.lock"}, sig: syscall.SIGINT, manifest: true},
		{name: "identity SIGTERM", args: []string{"identity"}, sig: syscall.SIGTERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := shortRoot(t)
			write := func(name, content string) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("server.sh", "exec cat\n")
			write("mcpepoch.toml", "label = \"fixture\"\ncommand = [\"sh\", \"server.sh\"]\n")
			mpath := filepath.Join(dir, ".mcpepoch", "manifest.toml")
			var before []byte
			var beforeInfo os.FileInfo
			if tc.manifest {
				if out, code := testenv.Run(t, dir, []string{"NO_COLOR=1"}, bin, "record"); code != 0 {
					t.Fatalf("first record: exit %d\n%s", code, out)
				}
				var err error
				if before, err = os.ReadFile(mpath); err != nil {
					t.Fatal(err)
				}
				beforeInfo, _ = os.Stat(mpath)
			}
			big, err := os.Create(filepath.Join(dir, "big.lock"))
			if err != nil {
				t.Fatal(err)
			}
			if err := big.Truncate(64 << 30); err != nil { // sparse: no disk used
				t.Skipf("cannot make a sparse file here: %v", err)
			}
			big.Close()
			if tc.args[0] == "identity" {
				write("mcpepoch.toml", "label = \"fixture\"\ncommand = [\"sh\", \"server.sh\"]\nlockfiles = [\"big.lock\"]\n")
			}

			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = dir
			cmd.Env = testenv.Environ("NO_COLOR=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{}) // closed when the command has exited
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(done) }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-done
			})

			opened(t, cmd.Process.Pid, filepath.Join(dir, "big.lock"), done) // reading 64 GiB takes far longer
			select {
			case <-done:
				t.Fatalf("%v exited before the signal: %v\n%s", tc.args, waitErr, stderr.String())
			default:
			}

			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(interruptBound):
				t.Fatalf("%v still running %s after %v\nstderr:\n%s", tc.args, interruptBound, tc.sig, stderr.String())
			}
			if code := cmd.ProcessState.ExitCode(); code != exitFailure {
				t.Errorf("%v after %v: exit %d, want %d\nstderr:\n%s", tc.args, tc.sig, code, exitFailure, stderr.String())
			}
			if !strings.Contains(stderr.String(), "mcpepoch: error: interrupted while hashing") {
				t.Errorf("stderr does not say it was interrupted:\n%s", stderr.String())
			}
			if tc.manifest {
				after, err := os.ReadFile(mpath)
				afterInfo, _ := os.Stat(mpath)
				if err != nil || !bytes.Equal(after, before) || !afterInfo.ModTime().Equal(beforeInfo.ModTime()) {
					t.Errorf("manifest changed by the interrupted record (%v):\nbefore:\n%s\nafter:\n%s", err, before, after)
				}
				if !strings.Contains(stderr.String(), "hint: "+mpath+" was left as it was") {
					t.Errorf("stderr does not say the manifest was left alone:\n%s", stderr.String())
				}
			}
		})
	}
}

// opened returns once process pid has file name open, or has exited
// (done closed): it is then hashing it, and its signal handlers, set up
// first thing, are in place. Where /proc has no fd directory it waits
// 300 ms instead.
func opened(t *testing.T, pid int, name string, done <-chan struct{}) {
	t.Helper()
	fds := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	if _, err := os.Stat(fds); err != nil {
		time.Sleep(300 * time.Millisecond)
		return
	}
	for deadline := time.Now().Add(interruptBound); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		select {
		case <-done:
			return
		default:
		}
		links, _ := filepath.Glob(filepath.Join(fds, "*"))
		for _, l := range links {
			if target, err := os.Readlink(l); err == nil && target == name {
				return
			}
		}
	}
	t.Fatalf("pid %d did not open %s within %s", pid, name, interruptBound)
}

// A lockfile that is not a regular file is refused at once, with the file
// named, instead of being read forever (/dev/zero) or blocking (a FIFO).
func TestRecordRefusesSpecialFiles(t *testing.T) {
	t.Parallel()
	bin := testenv.Mcpepoch(t)
	dir := shortRoot(t)
	if err := os.WriteFile(filepath.Join(dir, "server.sh"), []byte("exec cat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "lock.fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, lock := range []string{"lock.fifo", "/dev/zero"} {
		out, code := testenv.Run(t, dir, []string{"NO_COLOR=1"}, bin, "record", "--command", "sh server.sh", "--lockfile", lock)
		if code != exitUsage || !strings.Contains(out.Stderr, "not a regular file") || !strings.Contains(out.Stderr, lock) {
			t.Errorf("record --lockfile %s: exit %d, want %d naming the file as not regular\n%s", lock, code, exitUsage, out)
		}
	}
}
