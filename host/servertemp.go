package host

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode"

	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/flock"
	"github.com/mcpepoch/mcpepoch/internal/userdirs"
	"github.com/oklog/ulid/v2"
)

// serverTmp is a server's TMPDIR of its own (serverTemp) and the lock
// that says its host is alive.
type serverTmp struct {
	dir  string
	lock *os.File // flock held for as long as the server may use dir; nil without flock
}

// tempLockSuffix names a TMPDIR's lock file, beside it: <name>.lock.
const tempLockSuffix = ".lock"

// isTempName reports whether name is one serverTemp gives (tempName): ten
// characters of an epoch (Crockford's base32, lower case), a dash and a
// decimal count. A sweep touches nothing else in the directory.
func isTempName(name string) bool {
	ep, n, ok := strings.Cut(name, "-")
	if !ok || len(ep) != 10 || n == "" || len(n) > 19 {
		return false
	}
	for _, c := range ep {
		if unicode.IsUpper(c) || !strings.ContainsRune(ulid.Encoding, unicode.ToUpper(c)) {
			return false
		}
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// launches counts the TMPDIRs this process made: part of each name, since
// a credential relaunch starts a server under the epoch it had.
var launches atomic.Int64

// tempName is the name of the TMPDIR of the server of epoch ep: the last
// ten characters of ep, lower case, a dash and this process's count of
// launches.
func tempName(ep epoch.Epoch) string {
	s := strings.ToLower(string(ep))
	return s[max(0, len(s)-10):] + "-" + strconv.FormatInt(launches.Add(1), 10)
}

// serverTemp makes the directory the server of epoch ep gets as its
// TMPDIR: <state>/t/<tempName> under the user's state directory
// (internal/userdirs), mode 0700, short enough for the unix sockets tools
// make there. The shared temporary directory is one a sandboxed agent
// writes (Claude Code's and Codex's sandboxes let it write /tmp), and
// some tools keep compiled code there and run it without checking it
// against its source (tsx's cache of transformed modules): a directory of
// the server's own, which such an agent cannot write, keeps them from
// running the agent's. The host starts no server without one (the error
// names the directory). It is removed once the server exits
// (serverTmp.remove).
//
// Beside it, <name>.lock holds an exclusive flock(2) for as long as the
// host may start or run the server: the kernel drops it when the host
// dies, however it dies. serverTemp also starts a sweep (sweepTemps) that
// removes every such directory whose lock it can take: what a host
// killed before it could remove its server's left behind. Where flock(2)
// does not exist, nothing is locked and nothing swept: a directory a
// killed host left stays. logf reports what a sweep could not remove.
func serverTemp(ep epoch.Epoch, logf func(string, ...any)) (*serverTmp, error) {
	state, err := userdirs.State()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(state, "t")
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, err
	}
	if err := ownDir(parent); err != nil {
		return nil, err
	}
	go sweepTemps(parent, logf)
	name := tempName(ep)
	t := &serverTmp{dir: filepath.Join(parent, name)}
	if flock.Supported {
		// Locked under a name no sweep looks at, then linked into
		// place (a link never replaces a file, as a rename would): a
		// sweep never finds the lock file of a live host unlocked.
		f, err := os.CreateTemp(parent, "."+name+".*")
		if err != nil {
			return nil, err
		}
		err = flock.File(f, true, 0)
		if err == nil {
			err = os.Link(f.Name(), t.dir+tempLockSuffix)
		}
		os.Remove(f.Name())
		if err != nil {
			f.Close()
			return nil, err
		}
		t.lock = f
	}
	if err := os.Mkdir(t.dir, 0o700); err != nil {
		t.remove(logf)
		return nil, err
	}
	return t, nil
}

// ownDir checks that dir is a directory itself (not a symbolic link to
// one, which could lead anywhere an agent writes), owned by this process's
// user, that no one else may write.
func ownDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%v)", dir, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s may be written by others (mode %v)", dir, fi.Mode().Perm())
	}
	return nil
}

// remove removes the directory, then its lock file, and releases the
// lock. A directory that cannot be removed keeps its lock file, for a
// later sweep to try again, and logf says so. A nil t does nothing.
func (t *serverTmp) remove(logf func(string, ...any)) {
	if t == nil {
		return
	}
	err := removeTree(t.dir)
	if err != nil {
		logf("the server's TMPDIR %s cannot be removed (%v): the next host start tries again", t.dir, err)
	}
	if t.lock != nil {
		if err == nil {
			os.Remove(t.dir + tempLockSuffix)
		}
		t.lock.Close()
	}
}

// removeTree is os.RemoveAll that, when that fails, makes every directory
// of the tree writable and searchable by its owner (a server may leave
// read-only ones, as the Go module cache does) and tries once more.
// Symbolic links are not followed.
func removeTree(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		return nil
	}
	// Each directory is opened up when the walk reaches it, before the
	// walk reads it.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, werr error) error {
		if werr == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

// sweeping lets one sweep run at a time in a process.
var sweeping sync.Mutex

// sweepTemps removes, in parent, each server TMPDIR whose lock file it can
// lock: its host is gone. It looks only at lock files named for a
// TMPDIR (tempNamePattern); a directory with no lock file is left alone,
// and so is one whose lock is held.
func sweepTemps(parent string, logf func(string, ...any)) {
	if !flock.Supported || !sweeping.TryLock() {
		return
	}
	defer sweeping.Unlock()
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), tempLockSuffix)
		if !ok || !isTempName(name) || !e.Type().IsRegular() {
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
		if err := removeTree(dir); err != nil {
			logf("the TMPDIR %s a stopped host left cannot be removed: %v", dir, err)
		} else {
			os.Remove(lockPath)
		}
		f.Close()
	}
}
