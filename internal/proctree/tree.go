// Package proctree reads the process table: a process's parent, whether it
// has a controlling terminal, its executable and arguments, the pids
// running, and the walk up the tree that the person checks make.
//
// Linux reads /proc (proc(5)); macOS sysctl kern.proc.pid and
// kern.procargs2, else ps(1); elsewhere every read fails, so that a caller
// that needs the table to vouch for something refuses.
package proctree

// MaxAncestry bounds every walk up the process tree.
const MaxAncestry = 1024

// IsAncestor reports whether want is from or one of from's ancestors. A
// process that cannot be examined ends the walk (false).
func IsAncestor(from, want int) bool {
	for n := 0; from > 1 && n < MaxAncestry; n++ {
		if from == want {
			return true
		}
		var err error
		if from, _, err = Parent(from); err != nil {
			return false
		}
	}
	return false
}
