package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// maxHeadFile is the largest head file ReadHead reads, in bytes; a real
// one is headSize.
const maxHeadFile = 4 << 10

// headSize is the size of a head file in bytes. Every head is padded with
// spaces to this size, so a writer rewrites it in place, one pwrite(2) of
// the whole file at offset 0 and an fdatasync, and the file never changes
// size (see the package doc, "Head file").
const headSize = 192

// headPrefix starts every head file since heads carry a checksum; the sum
// follows it at a fixed offset.
const headPrefix = `{"v":1,"sum":"crc32c:`

// castagnoli is the CRC-32C table, built on first use: building it (8 KiB
// of slicing tables) cost every start of the binary a fifth of a millisecond.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// headSum is the checksum of a head: CRC-32C of "SEQ HASH" in hex. It
// detects a head torn by a crash during its in-place rewrite; it is no
// protection against anyone who can write the file.
func headSum(h Head) string {
	return fmt.Sprintf("%08x", crc32.Checksum([]byte(strconv.FormatInt(h.Seq, 10)+" "+h.Hash), castagnoli()))
}

// encodeHead returns the head file bytes for h: headPrefix, the sum, seq
// and hash as one JSON object, padded with spaces to headSize-1 bytes and
// a newline.
func encodeHead(h Head) []byte {
	b := make([]byte, 0, headSize)
	b = append(b, headPrefix...)
	b = append(b, headSum(h)...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, h.Seq, 10)
	b = append(b, `,"hash":`...)
	b = strconv.AppendQuote(b, h.Hash)
	b = append(b, '}')
	for len(b) < headSize-1 {
		b = append(b, ' ')
	}
	return append(b, '\n')
}

// TornHeadError is a head file that a crash left half rewritten: it has
// the size and start of a head, but its contents do not match its
// checksum. What it named is lost; it is not evidence that anyone edited
// it (see the package doc, "Head file").
type TornHeadError struct {
	Path string
}

func (e *TornHeadError) Error() string {
	return fmt.Sprintf("%s: head file torn (its checksum does not match: a crash during its rewrite); truncation of the log before its next record cannot be detected", e.Path)
}

// ReadHead reads the head file at path. ok is false, with a nil error, if
// the file does not exist. A head torn by a crash is a *TornHeadError. A
// malformed file is an error naming the file and the member at fault; so
// is, at once and without reading it, a symbolic link, anything but a
// regular file (a FIFO would block the open forever) and a file over 4 KiB
// (safefile). A head file without a checksum (as written before heads had
// one) is read as it is.
//
// A writer rewrites the head in place; a reader that does not hold the
// log's lock may meet a rewrite half done, so a torn head is read again,
// a few times, before it is reported.
func ReadHead(path string) (h Head, ok bool, err error) {
	for try := 0; ; try++ {
		h, ok, err = readHeadOnce(path)
		var torn *TornHeadError
		if !errors.As(err, &torn) || try == 3 {
			return h, ok, err
		}
		time.Sleep(time.Millisecond)
	}
}

func readHeadOnce(path string) (Head, bool, error) {
	b, err := safefile.ReadFileNoFollow(path, maxHeadFile)
	if errors.Is(err, os.ErrNotExist) {
		return Head{}, false, nil
	}
	if err != nil {
		return Head{}, false, err
	}
	summed := len(b) == headSize && (bytes.HasPrefix(b, []byte(headPrefix)) || len(bytes.Trim(b, "\x00")) == 0)
	var m struct {
		V    *int   `json:"v"`
		Sum  string `json:"sum"`
		Seq  *int64 `json:"seq"`
		Hash string `json:"hash"`
	}
	bad := func(format string, args ...any) (Head, bool, error) {
		if summed {
			return Head{}, false, &TornHeadError{Path: path}
		}
		return Head{}, false, fmt.Errorf("%s: "+format, append([]any{path}, args...)...)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return bad("not a head file: %v", err)
	}
	switch {
	case m.V == nil || *m.V != Version:
		return bad("member \"v\": want %d", Version)
	case m.Seq == nil || *m.Seq < 1:
		return bad("member \"seq\": want a positive integer")
	}
	if err := checkDigest(m.Hash); err != nil {
		return bad("member \"hash\": %v", err)
	}
	h := Head{Seq: *m.Seq, Hash: m.Hash}
	if summed && m.Sum != "crc32c:"+headSum(h) {
		return Head{}, false, &TornHeadError{Path: path}
	}
	return h, true, nil
}

// headFile is the head file a Log rewrites: open, once it has the fixed
// size, so that each rewrite is one pwrite and one fdatasync.
type headFile struct {
	mu   sync.Mutex // a Sync writes it outside the Log's own lock
	path string
	f    *os.File
	id   fileID // f's device and inode, read when it was opened
	lazy bool   // in-place rewrites skip the fdatasync (Options.LazyHead)
	// every bounds how long a lazy rewrite waits for its fdatasync
	// (Options.HeadSyncEvery; zero: until the next atomic write).
	// dirtySince is when the oldest rewrite not yet synced was made, zero
	// when every rewrite is durable; syncs counts fdatasyncs, for tests.
	every      time.Duration
	dirtySince time.Time
	syncs      int
}

// write writes h to the head file. While the open file is still the one
// at the path and has the fixed size, it is rewritten in place (pwrite,
// fdatasync): a crash leaves the old head, the new one, or a torn one that
// ReadHead reports as such. A Log's first write opens the head file at
// the path for that, so that a short-lived Log (mcpepoch record's one
// record in the builds log) rewrites it in place too. Otherwise (no head
// yet, a head without a checksum, a file deleted or replaced) the head is
// written atomically: temporary file in the same directory, fsync, rename,
// fsync of the directory; then opened for the next rewrite.
func (hf *headFile) write(h Head) error {
	hf.mu.Lock()
	defer hf.mu.Unlock()
	b := encodeHead(h)
	if hf.f == nil {
		hf.f, hf.id = openHead(hf.path)
	}
	if hf.f != nil {
		if hf.stillInPlace() {
			if _, err := hf.f.WriteAt(b, 0); err != nil {
				return fmt.Errorf("write %s: %w", hf.path, err)
			}
			if hf.lazy {
				if hf.dirtySince.IsZero() {
					hf.dirtySince = time.Now()
				}
				if hf.every <= 0 || time.Since(hf.dirtySince) < hf.every {
					return nil
				}
			}
			return hf.syncLocked()
		}
		hf.closeLocked()
	}
	if err := atomicfile.Write(hf.path, b, 0o600); err != nil {
		return err
	}
	hf.dirtySince = time.Time{}     // synced by the atomic write
	hf.f, hf.id = openHead(hf.path) // nil: the next write replaces it again
	return nil
}

// stillInPlace reports whether the path still names the open head file,
// itself and not through a symbolic link, and the file has the fixed size
// (headSize): one lstat where the platform has inodes.
func (hf *headFile) stillInPlace() bool {
	if same, known := namedWithSize(hf.id, hf.path, headSize); known {
		return same
	}
	cur, err1 := hf.f.Stat()
	now, err2 := os.Lstat(hf.path)
	return err1 == nil && err2 == nil && os.SameFile(cur, now) && cur.Size() == headSize
}

// syncLocked makes the head's rewrites durable: one fdatasync.
func (hf *headFile) syncLocked() error {
	hf.syncs++
	if err := fdatasync(hf.f); err != nil {
		return fmt.Errorf("write %s: fdatasync: %w", hf.path, err)
	}
	hf.dirtySince = time.Time{}
	return nil
}

// due returns when the lazy rewrites not yet synced must be (every after
// the oldest of them), zero when none waits or every is zero.
func (hf *headFile) due() time.Time {
	hf.mu.Lock()
	defer hf.mu.Unlock()
	if hf.dirtySince.IsZero() || hf.every <= 0 || hf.f == nil {
		return time.Time{}
	}
	return hf.dirtySince.Add(hf.every)
}

// syncDue syncs the head when its lazy rewrites are due (due).
func (hf *headFile) syncDue() error {
	hf.mu.Lock()
	defer hf.mu.Unlock()
	if hf.dirtySince.IsZero() || hf.every <= 0 || hf.f == nil || time.Since(hf.dirtySince) < hf.every {
		return nil
	}
	return hf.syncLocked()
}

// syncNow syncs the head when a lazy rewrite is not durable yet.
func (hf *headFile) syncNow() error {
	hf.mu.Lock()
	defer hf.mu.Unlock()
	if hf.dirtySince.IsZero() || hf.f == nil {
		return nil
	}
	return hf.syncLocked()
}

// openHead opens the head file at path for rewriting in place, with its
// device and inode, or returns nil if it is missing, a symbolic link or
// not a regular file.
func openHead(path string) (*os.File, fileID) {
	f, err := os.OpenFile(path, os.O_RDWR|noFollow, 0)
	if err != nil {
		return nil, fileID{}
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fileID{}
	}
	return f, idOf(fi)
}

func (hf *headFile) close() {
	hf.mu.Lock()
	defer hf.mu.Unlock()
	hf.closeLocked()
}

func (hf *headFile) closeLocked() {
	if hf.f != nil {
		hf.f.Close()
		hf.f, hf.id = nil, fileID{}
	}
	hf.dirtySince = time.Time{} // what was not synced is the kernel's to write
}

// removeStaleTemps removes temporary head files a writer killed in
// an atomic head write left behind. It runs under the exclusive lock, when
// no head is being written.
func removeStaleTemps(headPath string) {
	pattern := filepath.Join(filepath.Dir(headPath), "."+filepath.Base(headPath)+".tmp-*")
	names, _ := filepath.Glob(pattern)
	for _, n := range names {
		os.Remove(n)
	}
}
