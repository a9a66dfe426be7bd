//go:build unix && !linux

package build

import "golang.org/x/sys/unix"

// statDirFlag is how the walk opens a directory it only needs as the base
// of fstatat, openat and readlinkat: for reading, where there is no O_PATH
// (macOS has none).
const statDirFlag = unix.O_RDONLY
