package audittest

import (
	"syscall"
	"testing"
	"time"
)

// CPU starts counting the process's CPU time (user plus system, from
// getrusage) and returns the function that reports it per op as
// cpu-ms/op: on a shared machine, the figure its wall time hides. Call it
// just before the loop and the result just after.
func CPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Microseconds())/1e3/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
