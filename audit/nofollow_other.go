//go:build !unix

package audit

// noFollow is 0 where O_NOFOLLOW does not exist; Open then follows a
// symbolic link like any other path.
const noFollow = 0
