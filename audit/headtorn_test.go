package audit

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
)

// tornHead returns what a crash can leave of a head rewritten from old to
// new in place: the first k bytes of the new head, the rest of the old.
func tornHead(old, new Head, k int) []byte {
	return append(encodeHead(new)[:k:k], encodeHead(old)[k:]...)
}

// TestHeadTorn: a crash tore the head during its in-place rewrite. The
// head is reported as torn, not as naming another record (which would read
// as tampering); the next Open records head=torn in the chain, as it does
// a missing head, and goes on.
func TestHeadTorn(t *testing.T) {
	path := writeLog(t, 5)
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	old, cur := Head{Seq: 4, Hash: recs[3].Hash}, Head{Seq: 5, Hash: recs[4].Hash}
	for k := 1; k < headSize; k++ {
		b := tornHead(old, cur, k)
		if bytes.Equal(b, encodeHead(cur)) || bytes.Equal(b, encodeHead(old)) {
			continue
		}
		if err := os.WriteFile(HeadPath(path), b, 0o600); err != nil {
			t.Fatal(err)
		}
		var torn *TornHeadError
		if _, _, err := ReadHead(HeadPath(path)); !errors.As(err, &torn) {
			t.Fatalf("torn at byte %d: ReadHead error %v, want a TornHeadError\n%s", k, err, b)
		}
	}
	expectFindings(t, "before Open", verify(t, path).Problems, "head-torn 0 0")

	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs := l.Recoveries()
	if len(rs) != 1 || rs[0].Kind != RecoveredHead || rs[0].Seq != 6 || !strings.Contains(rs[0].String(), "torn") {
		t.Fatalf("recoveries %+v", rs)
	}
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	recs, err = Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 7 || recs[5].Type != TypeLogRecovered || recs[5].Fields[FieldHead] != HeadTorn || recs[5].Prev != recs[4].Hash {
		t.Fatalf("records after Open: %+v", recs)
	}
	rep := mustVerify(t, path)
	expectFindings(t, "after Open", rep.Warnings, "head-was-missing 6 6")
	if msg := rep.Warnings[0].Error(); !strings.Contains(msg, "torn by a crash") {
		t.Errorf("warning %q", msg)
	}
}

// TestHeadZeroed: a head of the right size that holds only zero bytes (what
// some file systems show of a block whose write did not complete) is torn.
func TestHeadZeroed(t *testing.T) {
	path := writeLog(t, 2)
	if err := os.WriteFile(HeadPath(path), make([]byte, headSize), 0o600); err != nil {
		t.Fatal(err)
	}
	expectFindings(t, "zeroed head", verify(t, path).Problems, "head-torn 0 0")
}

// TestHeadForgedWithSum: a head with a valid checksum that names another
// record is not torn: it is a head mismatch, as before heads had a sum.
func TestHeadForgedWithSum(t *testing.T) {
	path := writeLog(t, 5)
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(HeadPath(path), encodeHead(Head{Seq: 5, Hash: recs[3].Hash}), 0o600); err != nil {
		t.Fatal(err)
	}
	var mis *HeadMismatchError
	if l, err := Open(path, nil); !errors.As(err, &mis) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("Open: %v, want a HeadMismatchError", err)
	}
}

// TestHeadRewrittenInPlace: after the first head write, a Log rewrites the
// same file (same inode, fixed size) for every step; a head without a
// checksum, as written before, is read, then replaced by one with it.
func TestHeadRewrittenInPlace(t *testing.T) {
	h, ok, err := ReadHead("testdata/golden-v0.head")
	if err != nil || !ok || h.Seq != 3 {
		t.Fatalf("head without a checksum: %+v %v %v", h, ok, err)
	}
	l, path := openTemp(t)
	ino := func() uint64 {
		fi, err := os.Stat(HeadPath(path))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != headSize {
			t.Fatalf("head is %d bytes, want %d", fi.Size(), headSize)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	var first uint64
	for i := 0; i < 4; i++ {
		if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = ino()
		} else if ino() != first {
			t.Fatalf("append %d replaced the head file", i+1)
		}
	}
	l.Close()
	if h, _, err := ReadHead(HeadPath(path)); err != nil || h.Seq != 4 {
		t.Fatalf("head %+v %v", h, err)
	}
}

// TestHeadRewrittenInPlaceByANewLog: a Log opened on a log that has a
// head (mcpepoch record appends one record and exits) rewrites that head
// in place from its first append, no temporary file and rename each time.
func TestHeadRewrittenInPlaceByANewLog(t *testing.T) {
	path := writeLog(t, 2)
	before, err := os.Stat(HeadPath(path))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		l, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	after, err := os.Stat(HeadPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Errorf("a new Log's append replaced the head file instead of rewriting it")
	}
	if h, _, err := ReadHead(HeadPath(path)); err != nil || h.Seq != 4 {
		t.Fatalf("head %+v %v, want seq 4", h, err)
	}
	if rep := verify(t, path); !rep.OK {
		t.Fatalf("verify: %+v", rep)
	}
}

// TestLazyHead: with Options.LazyHead the head is still rewritten after
// every append; a head that lost its last rewrite in a crash is behind a
// chain that leads to it, and the next Open brings it up to date.
func TestLazyHead(t *testing.T) {
	path := writeLog(t, 1)
	l, err := Open(path, &Options{LazyHead: true})
	if err != nil {
		t.Fatal(err)
	}
	before, _, _ := ReadHead(HeadPath(path))
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	l.Close()
	h, _, err := ReadHead(HeadPath(path))
	if err != nil || h.Seq != 2 {
		t.Fatalf("head %+v %v after a lazy append, want seq 2", h, err)
	}
	// A crash lost the rewrite: the head on disk is the one before it.
	if err := os.WriteFile(HeadPath(path), encodeHead(before), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err = Open(path, &Options{LazyHead: true})
	if err != nil {
		t.Fatalf("Open with a head one rewrite behind: %v", err)
	}
	l.Close()
	if rs := l.Recoveries(); len(rs) != 1 || rs[0].Kind != RecoveredHead {
		t.Errorf("recoveries %+v, want the head brought up to date", rs)
	}
	if rep := verify(t, path); !rep.OK {
		t.Fatalf("verify: %+v", rep)
	}
}
