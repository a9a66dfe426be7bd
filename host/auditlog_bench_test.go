package host

import (
	"sync"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// BenchmarkAuditWriter measures the host's audit writer under a burst of
// calls: 8 callers each make 1,000 calls as fast as they can queue them,
// two records per call (tool_called with a keyed args digest, then
// tool_result), as the host queues them. The writer appends in groups to a
// real log on disk (one write, one fsync, one head rewrite per group).
// Reported per burst of 8,000 calls:
//
//	backlog-ms   from the last record queued until every record is written
//	burst-ms     from the first record queued until every record is written
//	groups       groups written (each one fsync of the log)
//
// scripts/bench-audit.sh runs it against the target of 100 ms of backlog.
func BenchmarkAuditWriter(b *testing.B) {
	const callers, calls = 8, 1000
	dir := b.TempDir()
	if err := layout.MkdirAll(layout.Dir(dir)); err != nil {
		b.Fatal(err)
	}
	a, err := openAuditor(dir, b.Logf)
	if err != nil {
		b.Fatal(err)
	}
	defer a.close()
	ep, run := epoch.Epoch("01JQ8Z5K2M7N4P6Q8R0S2T4V6W"), epoch.RunID("01JQ8Z5K2M7N4P6Q8R0S2T4V6X")
	args := []byte(`{"path":"README.md","limit":10}`)
	var backlog, burst time.Duration
	groups := 0
	for b.Loop() {
		before := benchHead(b, a)
		start := time.Now()
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for range calls {
					a.event(audit.TypeToolCalled, ep, run, map[string]any{audit.FieldTool: "echo", audit.FieldArgsDigest: a.argsDigest(args)})
					a.event(audit.TypeToolResult, ep, run, map[string]any{audit.FieldTool: "echo", "is_error": false, "duration_ms": "0"})
				}
			})
		}
		wg.Wait()
		queued := time.Now()
		a.flush()
		done := time.Now()
		backlog += done.Sub(queued)
		burst += done.Sub(start)
		if err := a.healthy(); err != nil {
			b.Fatal(err)
		}
		if n := benchHead(b, a).Seq - before.Seq; n != 2*callers*calls {
			b.Fatalf("%d records written, want %d", n, 2*callers*calls)
		}
		groups += a.groups
		a.groups = 0
	}
	n := float64(b.N)
	b.ReportMetric(float64(backlog.Microseconds())/1000/n, "backlog-ms")
	b.ReportMetric(float64(burst.Microseconds())/1000/n, "burst-ms")
	b.ReportMetric(float64(groups)/n, "groups")
}

// BenchmarkAuditGuard measures what a tools/call's wait for its record
// costs the goroutine that forwards it: guard writes the tool_called
// record (and what was queued before it) into the log file, under the
// log's lock, before the call may go; the fsync follows in the writer
// goroutine. One tool_result is queued before each call, as a
// sequential client's previous answer would be.
func BenchmarkAuditGuard(b *testing.B) {
	dir := b.TempDir()
	if err := layout.MkdirAll(layout.Dir(dir)); err != nil {
		b.Fatal(err)
	}
	a, err := openAuditor(dir, b.Logf)
	if err != nil {
		b.Fatal(err)
	}
	defer a.close()
	ep, run := epoch.Epoch("01JQ8Z5K2M7N4P6Q8R0S2T4V6W"), epoch.RunID("01JQ8Z5K2M7N4P6Q8R0S2T4V6X")
	args := []byte(`{"path":"README.md","limit":10}`)
	late := 0
	for b.Loop() {
		a.event(audit.TypeToolResult, ep, run, map[string]any{audit.FieldTool: "echo", "is_error": false, "duration_ms": "0"})
		t := a.guard(audit.TypeToolCalled, ep, run, map[string]any{audit.FieldTool: "echo", audit.FieldArgsDigest: a.argsDigest(args)}, true)
		if written, _ := a.recorded(t); !written {
			late++
			if !a.whenRecorded(t) {
				b.Fatal("record not written")
			}
		}
	}
	b.ReportMetric(float64(late)/float64(b.N), "waited/op")
}

// benchHead is the head a's log file names once a's writes are synced
// (flush).
func benchHead(b *testing.B, a *auditor) audit.Head {
	b.Helper()
	a.flush()
	h, _, err := audit.ReadHead(audit.HeadPath(a.log.Path()))
	if err != nil {
		b.Fatal(err)
	}
	return h
}
