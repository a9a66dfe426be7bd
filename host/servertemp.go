package host

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/flock"
	"github.com/mcpepoch/mcpepoch/internal/userdirs"
)

// serverTmp is a server's TMPDIR of its own (serverTemp) and the lock
// that says its host is alive.
type serverTmp struct {
	dir  string
	lock *os.File // flock held for as long as the server may use dir; nil without flock
}

// tempLockSuffix names a TMPDIR's lock file, beside it: <name>.lock.
const tempLockSuffix = ".lock"

// serverTemp makes the directory the server of epoch ep gets as its
// TMPDIR: <state>/t/<the last ten characters of ep, lower case> under the
// user's state directory (internal/userdirs), mode 0700, short enough for
// the unix sockets tools make there. The shared temporary directory is one
// a sandboxed agent writes (Claude Code's and Codex's sandboxes let it
// write /tmp), and some tools keep compiled code there and run it without
// checking it against its source (tsx's cache of transformed modules): a
// directory of the server's own, which such an agent cannot write, keeps
// them from running the agent's. It is removed once the server exits
// (serverTmp.remove).
//
// Beside it, <name>.lock holds an exclusive flock(2) for as long as the
// host may start or run the server: the kernel drops it when the host
// dies, however it dies. Before it makes its own, serverTemp removes
// every directory whose lock it can take (sweepTemps): what a host killed
// before it could remove its server's left behind. Where flock(2) does
// not exist, nothing is locked and nothing swept: a directory a killed
// host left stays. logf reports what could not be swept.
func serverTemp(ep epoch.Epoch, logf func(string, ...any)) (*serverTmp, error) {
	state, err := userdirs.State()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(state, "t")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, err
	}
	sweepTemps(parent, logf)
	s := strings.ToLower(string(ep))
	name := s[max(0, len(s)-10):]
	t := &serverTmp{dir: filepath.Join(parent, name)}
	if flock.Supported {
		// Locked under a name no sweep looks at, then renamed into
		// place: a sweep never finds the lock file of a live host
		// unlocked.
		f, err := os.CreateTemp(parent, "."+name+".*")
		if err != nil {
			return nil, err
		}
		if err := flock.File(f, true, 0); err != nil {
			os.Remove(f.Name())
			f.Close()
			return nil, err
		}
		if err := os.Rename(f.Name(), t.dir+tempLockSuffix); err != nil {
			os.Remove(f.Name())
			f.Close()
			return nil, err
		}
		t.lock = f
	}
	if err := os.Mkdir(t.dir, 0o700); err != nil {
		t.remove()
		return nil, err
	}
	return t, nil
}

// remove removes the directory and its lock file, then releases the
// lock. A nil t does nothing.
func (t *serverTmp) remove() {
	if t == nil {
		return
	}
	os.RemoveAll(t.dir)
	if t.lock != nil {
		os.Remove(t.dir + tempLockSuffix)
		t.lock.Close()
	}
}

// sweepTemps removes, in parent, each server TMPDIR whose lock file it can
// lock: its host is gone. A directory with no lock file is left alone (a
// host that cannot lock, or one being made), and so is one whose lock is
// held.
func sweepTemps(parent string, logf func(string, ...any)) {
	if !flock.Supported {
		return
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), tempLockSuffix)
		if !ok || strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
			continue
		}
		lockPath := filepath.Join(parent, e.Name())
		f, err := os.OpenFile(lockPath, os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue // swept by another host meanwhile
		}
		if flock.File(f, true, 0) != nil {
			f.Close() // its host is alive
			continue
		}
		dir := filepath.Join(parent, name)
		if err := os.RemoveAll(dir); err != nil {
			logf("the TMPDIR %s a stopped host left cannot be removed: %v", dir, err)
		} else {
			os.Remove(lockPath)
		}
		f.Close()
	}
}
