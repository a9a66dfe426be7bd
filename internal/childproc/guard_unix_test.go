//go:build unix

package childproc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startGroup starts sleep in a process group of its own and returns its
// pid (the group id) and a channel closed once it exited.
func startGroup(t *testing.T) (int, <-chan struct{}) {
	t.Helper()
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd.Process.Pid, done
}

func exited(done <-chan struct{}, within time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}

// One guard watches several groups: when the host's end of its pipe
// closes (the host dies, or Stop), it kills those still watched and
// spares those the host stopped itself (Unwatch).
func TestGuardKillsTheGroupsStillWatched(t *testing.T) {
	g := NewGuard()
	a, aDone := startGroup(t)
	b, bDone := startGroup(t)
	c, cDone := startGroup(t)
	for _, pgid := range []int{a, b, c} {
		if err := g.Watch(pgid); err != nil {
			t.Fatal(err)
		}
	}
	g.Unwatch(b)
	if exited(aDone, 100*time.Millisecond) {
		t.Fatal("a watched group ended while the host lives")
	}
	g.Stop()
	if !exited(aDone, 5*time.Second) || !exited(cDone, 5*time.Second) {
		t.Error("the guard did not kill the groups it still watched")
	}
	if exited(bDone, 200*time.Millisecond) {
		t.Error("the guard killed a group the host had stopped watching")
	}
	if err := g.Watch(b); err == nil {
		t.Error("Watch after Stop started a guard")
	}
}

// A guard that died (killed by someone) is replaced at the next Watch,
// with every group still watched handed to the new one.
func TestGuardReplacedWhenItDied(t *testing.T) {
	g := NewGuard()
	a, aDone := startGroup(t)
	b, bDone := startGroup(t)
	if err := g.Watch(a); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	first := g.cmd
	g.mu.Unlock()
	first.Process.Kill()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(first.Process.Pid, 0) != nil || time.Now().After(deadline) {
			break
		}
		var ws syscall.WaitStatus
		if p, _ := syscall.Wait4(first.Process.Pid, &ws, syscall.WNOHANG, nil); p == first.Process.Pid {
			break
		}
	}
	if err := g.Watch(b); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	second := g.cmd
	g.mu.Unlock()
	if second == first {
		t.Fatal("Watch kept writing to a guard that died")
	}
	g.Stop()
	if !exited(aDone, 5*time.Second) || !exited(bDone, 5*time.Second) {
		t.Error("the new guard did not kill both groups")
	}
}

// BenchmarkGuardWatch measures what the guard costs a restart: a group
// watched and forgotten by the host's one guard, against a guard process
// started and ended per server, as before.
func BenchmarkGuardWatch(b *testing.B) {
	b.Run("one guard", func(b *testing.B) {
		g := NewGuard()
		defer g.Stop()
		for b.Loop() {
			if err := g.Watch(1 << 22); err != nil {
				b.Fatal(err)
			}
			g.Unwatch(1 << 22)
		}
	})
	b.Run("guard per server", func(b *testing.B) {
		for b.Loop() {
			g := NewGuard()
			if err := g.Watch(1 << 22); err != nil {
				b.Fatal(err)
			}
			g.Unwatch(1 << 22)
			g.Stop()
		}
	})
}

// A guard that stopped reading (stopped by a signal) until its pipe is
// full holds up no start or stop of a server for more than guardWrite:
// it is killed, never firing, and a new one takes every group watched.
func TestGuardReplacedWhenItStopsReading(t *testing.T) {
	g := NewGuard()
	a, aDone := startGroup(t)
	if err := g.Watch(a); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	first := g.cmd
	g.mu.Unlock()
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := 0; ; i++ {
		if err := g.Watch(1 << 22); err != nil { // past pid_max: no such group
			t.Fatal(err)
		}
		g.Unwatch(1 << 22)
		g.mu.Lock()
		replaced := g.cmd != first
		g.mu.Unlock()
		if replaced {
			break
		}
		if time.Since(start) > 10*guardWrite {
			t.Fatalf("after %d starts and stops the stopped guard was still written to", i)
		}
	}
	if exited(aDone, 200*time.Millisecond) {
		t.Fatal("the stopped guard fired when it was replaced")
	}
	g.Stop()
	if !exited(aDone, 5*time.Second) {
		t.Error("the new guard did not take the group the stopped one watched")
	}
}
