//go:build unix

package audit

import (
	"os"
	"syscall"
)

// noFollow makes opening the log or its lock fail on a symbolic link
// instead of appending through it to wherever it points.
const noFollow = syscall.O_NOFOLLOW

// unchanged reports whether the log file f is still the one at path and
// has size bytes: one fstat and one stat, without the allocations of
// os.File.Stat and os.Stat (a step's catch-up asks it every time).
func unchanged(f *os.File, path string, size int64) bool {
	var a, b syscall.Stat_t
	if syscall.Fstat(int(f.Fd()), &a) != nil || syscall.Stat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Size == size
}
