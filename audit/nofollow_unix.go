//go:build unix

package audit

import "syscall"

// noFollow makes opening the log or its lock fail on a symbolic link
// instead of appending through it to wherever it points.
const noFollow = syscall.O_NOFOLLOW
