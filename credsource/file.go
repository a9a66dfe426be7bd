package credsource

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// checkFile resolves the file source path and checks where it lies; it
// returns the real path. The mode and owner are checked on the open
// descriptor by readFile, and on the path here.
func checkFile(root, path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if isNotExist(err) {
			return "", fmt.Errorf("%s does not exist", path)
		}
		return "", err
	}
	if config.Inside(realDir(root), real) {
		return "", fmt.Errorf("%s is inside the project (%s): keep secrets outside it", real, root)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	return real, checkMode(real, fi)
}

// checkMode refuses what is not a regular file of the user's with no group
// or other permission bits.
func checkMode(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (mode %v)", path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d)", path, st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s has mode %#o: others may read it; chmod 600 it", path, perm)
	}
	return nil
}

// readFile reads the file source at path after the checks of checkFile,
// repeated on the open descriptor so that a file swapped in between is
// checked too.
func readFile(root, path string) (string, error) {
	real, err := checkFile(root, path)
	if err != nil {
		return "", err
	}
	f, err := safefile.OpenNoFollow(real)
	if err != nil {
		if r := safefile.Refusal(err); r != nil {
			return "", fmt.Errorf("%s: %w", real, r)
		}
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if err := checkMode(real, fi); err != nil {
		return "", err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSecret+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", real, errors.Unwrap(err))
	}
	if len(b) > MaxSecret {
		return "", fmt.Errorf("%s is larger than %s", real, safefile.Size(MaxSecret))
	}
	return string(b), nil
}
