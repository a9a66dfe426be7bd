//go:build !unix

package audit

import "os"

// noFollow is 0 where O_NOFOLLOW does not exist; Open then follows a
// symbolic link like any other path.
const noFollow = 0

// fileID is empty where the platform has no inode.
type fileID struct{ ok bool }

func idOf(fi os.FileInfo) fileID { return fileID{} }

// unchanged reports false: a step's catch-up then looks the portable way.
func unchanged(id fileID, path string, size int64) bool { return false }

// stillNamed cannot tell: the caller compares os.FileInfo.
func stillNamed(id fileID, path string) (same, known bool) { return false, false }

// namedWithSize cannot tell either.
func namedWithSize(id fileID, path string, size int64) (same, known bool) { return false, false }
