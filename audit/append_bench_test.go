package audit

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAppendOne measures one step of one record, the audit writer's
// work per record when calls come one at a time (each group is one call):
// seal, one write, one fsync of the log, one head rewrite, on a real file
// system. Besides the wall time per record (ns/op) it reports the
// process's CPU time per record (cpu-µs/op, user plus system, from
// getrusage), the figure a busy machine's wall time hides.
func BenchmarkAppendOne(b *testing.B) {
	l, _ := openTemp(b)
	ev := Event{Type: TypeToolCalled, Epoch: "01JQ8Z5K2M7N4P6Q8R0S2T4V6W", Run: "01JQ8Z5K2M7N4P6Q8R0S2T4V6X",
		Fields: map[string]any{FieldTool: "echo", FieldArgsDigest: "hmac-sha256:9f2c4b7e0d1a3f5c6b8e9d0a1c2b3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d"}}
	start := cpuTime()
	for b.Loop() {
		if _, err := l.AppendBatch([]Event{ev}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
}

// cpuTime returns the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// callEvents returns the two records the host writes per tools/call, as
// it builds them (fields as Attrs): the previous call's tool_result and
// this call's tool_called, which a sequential client's calls write in one
// step.
func callEvents() []Event {
	ep, run := "01JQ8Z5K2M7N4P6Q8R0S2T4V6W", "01JQ8Z5K2M7N4P6Q8R0S2T4V6X"
	now := time.Now()
	return []Event{
		{Type: TypeToolResult, Epoch: ep, Run: run, Time: now,
			Attrs: []Attr{{Key: FieldTool, Value: "echo"}, {Key: "is_error", Value: false}, {Key: "duration_ms", Value: "0"}}},
		{Type: TypeToolCalled, Epoch: ep, Run: run, Time: now, Guards: true,
			Attrs: []Attr{{Key: FieldTool, Value: "echo"}, {Key: FieldArgsDigest, Value: "hmac-sha256:9f2c4b7e0d1a3f5c6b8e9d0a1c2b3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d"}}},
	}
}

// BenchmarkSealCall measures the CPU of encoding one call's two records
// (canonical form, chain hash), without the file: the part of a call's
// audit cost that is this package's own code.
func BenchmarkSealCall(b *testing.B) {
	evs := callEvents()
	var e encoder
	var buf []byte
	e.prev = append(e.prev, GenesisPrev...)
	seq := int64(0)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		buf = buf[:0]
		for _, ev := range evs {
			seq++
			var err error
			if buf, _, err = e.sealNext(buf, seq, ev.Time, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkWriteCall measures Log.Write of one call's two records, as the
// host's forwarding goroutine does before it forwards the call: catch-up,
// encoding, one write(2), the check that the path still names the log.
// A Sync every 16 calls (about a millisecond of a sequential client's
// calls) makes them durable; its cost is reported apart as sync-µs/op,
// per call, and is not in ns/op.
func BenchmarkWriteCall(b *testing.B) {
	l, _ := openTemp(b)
	evs := callEvents()
	var syncing time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Write(evs); err != nil {
			b.Fatal(err)
		}
		if n++; n%16 == 0 {
			b.StopTimer()
			t := time.Now()
			if err := l.Sync(); err != nil {
				b.Fatal(err)
			}
			syncing += time.Since(t)
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(syncing.Nanoseconds())/1e3/float64(b.N), "sync-µs/op")
}

// BenchmarkSync measures one Sync after one call's records: the fsync
// of the log and the head's rewrite in place (pwrite, fdatasync), the
// writer goroutine's work per group. Wall time and, as cpu-µs/op, the
// process's CPU time. The lazy-head case is the same with
// Options.LazyHead (no fdatasync of the head): what the head's own
// flush costs a group. The host cases keep a copy of the head outside
// the project (synced with every group), with the head synced at every
// group as before and, as the host opens its log, lazily with
// HeadSyncEvery of a second: the fdatasync the second saves.
func BenchmarkSync(b *testing.B) {
	for _, c := range []struct {
		name  string
		lazy  bool
		every time.Duration
		copy  bool
	}{{"head", false, 0, false}, {"lazy-head", true, 0, false}, {"host-before", false, 0, true}, {"host", true, time.Second, true}} {
		b.Run(c.name, func(b *testing.B) {
			opts := &Options{LazyHead: c.lazy, HeadSyncEvery: c.every}
			if c.copy {
				opts.CopyDir = b.TempDir()
			}
			l, err := Open(filepath.Join(b.TempDir(), "audit.jsonl"), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			evs := callEvents()
			start := cpuTime()
			for b.Loop() {
				if _, err := l.Write(evs); err != nil {
					b.Fatal(err)
				}
				if err := l.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		})
	}
}

// BenchmarkArgsDigest measures the keyed digest of a small call's
// arguments, the args_digest of its tool_called record.
func BenchmarkArgsDigest(b *testing.B) {
	k, err := LoadKey(filepath.Join(b.TempDir(), "digest.key"))
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"path":"README.md","limit":10}`)
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		k.ArgsDigest(args)
	}
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkHeadRewrite measures a lazy head's rewrite in place, what each
// group pays for the head file without its fdatasync: the check that
// the path still names the open file with the fixed size (one lstat)
// and the pwrite.
func BenchmarkHeadRewrite(b *testing.B) {
	hf := headFile{path: filepath.Join(b.TempDir(), "audit.head"), lazy: true}
	defer hf.close()
	h := Head{Seq: 1, Hash: GenesisPrev}
	if err := hf.write(h); err != nil { // atomic: the file is made
		b.Fatal(err)
	}
	for b.Loop() {
		h.Seq++
		if err := hf.write(h); err != nil {
			b.Fatal(err)
		}
	}
	if hf.f == nil {
		b.Fatal("the head was not rewritten in place")
	}
}
