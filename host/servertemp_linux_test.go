package host

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// removeTree removes a tree with read-only directories in it (a server
// may leave them, as the Go module cache does), which os.RemoveAll alone
// cannot when not run as root. As root, the tree is made and removed on a
// thread whose uids are nobody's, where root's override does not apply.
func TestRemoveTreeReadOnly(t *testing.T) {
	base, err := os.MkdirTemp("", "removetree-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	var made, removed, left error
	dir := filepath.Join(base, "tmp")
	body := func() {
		ro := filepath.Join(dir, "ro", "deeper")
		if made = os.MkdirAll(ro, 0o700); made != nil {
			return
		}
		if made = os.WriteFile(filepath.Join(ro, "f"), []byte("x"), 0o400); made != nil {
			return
		}
		os.Chmod(ro, 0o500)
		os.Chmod(filepath.Dir(ro), 0o500)
		removed = removeTree(dir)
		_, left = os.Lstat(dir)
	}
	if os.Geteuid() != 0 {
		body()
	} else {
		done := make(chan struct{})
		go func() {
			defer close(done)
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			const nobody = 65534
			if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, nobody, nobody, nobody); e != 0 {
				made = e
				return
			}
			body()
		}()
		<-done
	}
	if made != nil {
		t.Fatalf("making the tree: %v", made)
	}
	if removed != nil {
		t.Fatalf("removeTree: %v", removed)
	}
	if !os.IsNotExist(left) {
		t.Fatalf("%s after removeTree: %v", dir, left)
	}
}
