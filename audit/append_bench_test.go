package audit

import (
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
