package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// maxHeadFile is the largest head file ReadHead reads, in bytes; a real
// one is under 120.
const maxHeadFile = 4 << 10

// ReadHead reads the head file at path. ok is false, with a nil error, if
// the file does not exist. A malformed file is an error naming the file and
// the member at fault; so is, at once and without reading it, a symbolic
// link, anything but a regular file (a FIFO would block the open forever)
// and a file over 4 KiB (safefile).
func ReadHead(path string) (h Head, ok bool, err error) {
	b, err := safefile.ReadFileNoFollow(path, maxHeadFile)
	if errors.Is(err, os.ErrNotExist) {
		return Head{}, false, nil
	}
	if err != nil {
		return Head{}, false, err
	}
	var m struct {
		V    *int   `json:"v"`
		Seq  *int64 `json:"seq"`
		Hash string `json:"hash"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Head{}, false, fmt.Errorf("%s: not a head file: %v", path, err)
	}
	switch {
	case m.V == nil || *m.V != Version:
		return Head{}, false, fmt.Errorf("%s: member \"v\": want %d", path, Version)
	case m.Seq == nil || *m.Seq < 1:
		return Head{}, false, fmt.Errorf("%s: member \"seq\": want a positive integer", path)
	}
	if err := checkDigest(m.Hash); err != nil {
		return Head{}, false, fmt.Errorf("%s: member \"hash\": %v", path, err)
	}
	return Head{Seq: *m.Seq, Hash: m.Hash}, true, nil
}

// writeHead writes h to path atomically: temporary file in the same
// directory, fsync, rename, fsync of the directory.
func writeHead(path string, h Head) error {
	b, err := canonical(map[string]any{"v": Version, "seq": h.Seq, "hash": h.Hash})
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// removeStaleTemps removes temporary head files a writer killed in
// writeHead left behind. It runs under the exclusive lock, when no head is
// being written.
func removeStaleTemps(headPath string) {
	pattern := filepath.Join(filepath.Dir(headPath), "."+filepath.Base(headPath)+".tmp-*")
	names, _ := filepath.Glob(pattern)
	for _, n := range names {
		os.Remove(n)
	}
}
