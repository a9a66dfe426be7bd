package main

// SIGTERM and SIGINT stop record and identity while they hash, even when a
// read never ends (a lockfile that is a FIFO nobody writes, or /dev/zero),
// and record leaves the run manifest as it was.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// interruptBound is how long a signalled command may take to exit.
const interruptBound = 10 * time.Second

func TestInterruptWhileHashing(t *testing.T) {
	bin := testenv.Mcpepoch(t)
	for _, tc := range []struct {
		name     string
		args     []string
		lockfile string // "" for the FIFO lock.fifo, named in mcpepoch.toml
		sig      syscall.Signal
		manifest bool // a manifest exists and must stay as it was
	}{
		{name: "record fifo SIGTERM", args: []string{"record", "--lockfile", "lock.fifo"}, sig: syscall.SIGTERM, manifest: true},
		{name: "record dev-zero SIGTERM", args: []string{"record", "--lockfile", "/dev/zero"}, lockfile: "/dev/zero", sig: syscall.SIGTERM, manifest: true},
		{name: "record fifo SIGINT", args: []string{"record", "--lockfile", "lock.fifo"}, sig: syscall.SIGINT, manifest: true},
		{name: "identity fifo SIGTERM", args: []string{"identity"}, sig: syscall.SIGTERM},
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
			fifo := filepath.Join(dir, "lock.fifo")
			if tc.lockfile == "" {
				if err := syscall.Mkfifo(fifo, 0o644); err != nil {
					t.Fatal(err)
				}
				if tc.args[0] == "identity" {
					write("mcpepoch.toml", "label = \"fixture\"\ncommand = [\"sh\", \"server.sh\"]\nlockfiles = [\"lock.fifo\"]\n")
				}
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

			if tc.lockfile == "" {
				// Opening the FIFO for writing returns once the command
				// opened it for reading: from then on its read blocks, as
				// no byte is ever written.
				opened := make(chan *os.File, 1)
				go func() {
					w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
					if err == nil {
						opened <- w
					}
				}()
				select {
				case w := <-opened:
					t.Cleanup(func() { w.Close() })
				case <-done:
					t.Fatalf("%v exited before reading the FIFO: %v\n%s", tc.args, waitErr, stderr.String())
				case <-time.After(interruptBound):
					// Unblock the writer's open, then fail.
					if r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
						r.Close()
					}
					t.Fatalf("%v never opened the FIFO\n%s", tc.args, stderr.String())
				}
			} else {
				time.Sleep(300 * time.Millisecond) // reading /dev/zero, which never ends
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
