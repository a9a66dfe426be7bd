//go:build !unix

package audit

import "os"

// noFollow is 0 where O_NOFOLLOW does not exist; Open then follows a
// symbolic link like any other path.
const noFollow = 0

// unchanged reports false: a step's catch-up then looks the portable way.
func unchanged(f *os.File, path string, size int64) bool { return false }
