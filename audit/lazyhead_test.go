package audit

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With LazyHead and HeadSyncEvery the head is rewritten after every step
// and made durable at most HeadSyncEvery after its oldest rewrite not yet
// synced: by the step that finds it due, by a Sync with nothing new once
// HeadDue has passed, and by Close. Without HeadSyncEvery it waits for
// an atomic write, as the builds log's writers want.
func TestLazyHeadSyncEvery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := Open(path, &Options{LazyHead: true, HeadSyncEvery: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Write([]Event{{Type: TypeClientClosed}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if h, _, err := ReadHead(HeadPath(path)); err != nil || h.Seq != 4 {
		t.Fatalf("head %+v %v, want seq 4 (rewritten at every step)", h, err)
	}
	// The first step wrote the head atomically (it had none): synced.
	if l.hf.syncs != 0 || l.HeadDue().IsZero() {
		t.Fatalf("%d head fdatasyncs, due %v; want none yet, and one due", l.hf.syncs, l.HeadDue())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l.hf.syncs != 1 {
		t.Errorf("Close made %d head fdatasyncs, want 1: a clean stop leaves the head durable", l.hf.syncs)
	}

	l, err = Open(path, &Options{LazyHead: true, HeadSyncEvery: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	due := l.HeadDue()
	if due.IsZero() || l.hf.syncs != 0 {
		t.Fatalf("after a lazy rewrite: due %v, %d syncs", due, l.hf.syncs)
	}
	if err := l.Sync(); err != nil || l.hf.syncs != 0 {
		t.Fatalf("Sync before the head was due: %v, %d syncs; want none", err, l.hf.syncs)
	}
	time.Sleep(time.Until(due))
	if err := l.Sync(); err != nil || l.hf.syncs != 1 || !l.HeadDue().IsZero() {
		t.Fatalf("Sync once the head was due: %v, %d syncs, due %v; want one, and none due", err, l.hf.syncs, l.HeadDue())
	}
	// A step that finds its head due syncs it itself.
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(25 * time.Millisecond)
	if _, err := l.Append(Event{Type: TypeClientClosed}); err != nil {
		t.Fatal(err)
	}
	if l.hf.syncs != 2 {
		t.Errorf("%d head syncs after a step found its head due, want 2", l.hf.syncs)
	}
	if l.cf.lazy {
		t.Error("the copy of the head is lazy too")
	}
}

// writeBatches writes n records in batches, with few fsyncs.
func writeBatches(t *testing.T, path string, n int) {
	t.Helper()
	l, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := 0; i < n; {
		k := min(n-i, MaxBatch)
		evs := make([]Event, k)
		for j := range evs {
			evs[j] = Event{Type: TypeToolCalled, Epoch: "01JQEPOCH", Run: "r1", Time: base.Add(time.Duration(i+j) * time.Millisecond),
				Fields: map[string]any{FieldTool: fmt.Sprintf("tool-%d", i+j)}}
		}
		if _, err := l.AppendBatch(evs); err != nil {
			t.Fatal(err)
		}
		i += k
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// A machine that stopped left a lazy head far behind the log (more than
// a batch): the records past it chain from it, so Verify warns, naming
// how many and since when, and Open brings the head up to date. A head
// that names a record the log no longer has is a truncation: a problem,
// and Open refuses the log.
func TestLaggingHeadIsNotTruncation(t *testing.T) {
	const n, at = 3 * MaxBatch, 100
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeBatches(t, path, n)
	recs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	old := Head{Seq: at, Hash: recs[at-1].Hash}
	if err := os.WriteFile(HeadPath(path), encodeHead(old), 0o600); err != nil {
		t.Fatal(err)
	}
	rep := verify(t, path)
	if !rep.OK {
		t.Fatalf("a lagging head is reported as a problem:\n%v", rep.Err())
	}
	var w *Problem
	for i := range rep.Warnings {
		if rep.Warnings[i].Kind == WarnHeadBehind {
			w = &rep.Warnings[i]
		}
	}
	since := recs[at].Time.UTC().Format(time.RFC3339Nano)
	if w == nil || !strings.Contains(w.Msg, fmt.Sprintf("%d records behind", n-at)) || !strings.Contains(w.Msg, fmt.Sprintf("seq %d to %d", at+1, n)) || !strings.Contains(w.Msg, since) {
		t.Fatalf("warnings %+v: want head-behind naming %d records, seq %d to %d, since %s", rep.Warnings, n-at, at+1, n, since)
	}
	l, err := Open(path, nil)
	if err != nil {
		t.Fatalf("Open with a head %d records behind: %v", n-at, err)
	}
	l.Close()
	if h, _, _ := ReadHead(HeadPath(path)); h.Seq != n {
		t.Errorf("head after Open: seq %d, want %d", h.Seq, n)
	}
	mustVerify(t, path)

	// Truncation: the head names seq n, the log now ends before it.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := 0
	for i := 0; i < n-10; i++ {
		cut += bytes.IndexByte(b[cut:], '\n') + 1
	}
	if err := os.WriteFile(path, b[:cut], 0o600); err != nil {
		t.Fatal(err)
	}
	rep = verify(t, path)
	if rep.OK || len(rep.Problems) != 1 || rep.Problems[0].Kind != ProblemTruncated {
		t.Errorf("a cut log: problems %+v, want one %s", rep.Problems, ProblemTruncated)
	}
	if _, err := Open(path, nil); err == nil {
		t.Error("Open appends to a log cut before the record its head names")
	}
}
