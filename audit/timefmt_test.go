package audit

import (
	"math/rand/v2"
	"testing"
	"time"
)

// A record's time is written exactly as TimeLayout formats it, for times
// across and beyond the four-digit years.
func TestAppendTimeAsLayout(t *testing.T) {
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 6, 1, 0, 0, 0, 1, time.UTC),
		time.Date(2026, 12, 1, 10, 0, 1, 250000000, time.UTC),
		time.Unix(0, 0).UTC(),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		times = append(times, time.Unix(r.Int64N(1<<38)-1<<37, r.Int64N(1e9)).UTC())
	}
	for _, tm := range times {
		want := tm.AppendFormat(nil, TimeLayout)
		if got := appendTime(nil, tm); string(got) != string(want) {
			t.Fatalf("%v: %s, want %s", tm, got, want)
		}
	}
}
