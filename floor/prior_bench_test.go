package floor

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/audit/audittest"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/trust"
)

// pinEvents are what earlier hosts of a project wrote about their trust
// store and floor, for a generated log: two roots pinned (the second
// twice), a floor accepted by a person, and floors held.
func pinEvents() []audit.Event {
	floor := func(by string) trust.Floor {
		return trust.Floor{V: 1, Root: "/home/dev/inventory", UpdatedAt: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
			UpdatedBy: by, Proof: []string{"presence"}, Exempt: []string{"echo"}}
	}
	pinned := func(root, by string) audit.Event {
		return audit.Event{Type: audit.TypeTrustPinned, Run: "01JQ8Z5K2M7N4P6Q8R0S2T4V6W", Fields: map[string]any{
			"path": "/home/dev/.config/mcpepoch", "store_digest": "sha256:" + root, "entries": 1,
			"floor_path": "/home/dev/.config/mcpepoch/floors/x.json", "floor_digest": "sha256:f",
			"root":  map[string]any{"id": root, "kind": "ssh", "name": "dev", "attested": false},
			"floor": floor(by)}}
	}
	return []audit.Event{
		pinned("root-a", "first_use"),
		{Type: audit.TypePolicyAccepted, Run: "r", Fields: map[string]any{"weakened": []any{"exempt"}}},
		pinned("root-b", "accepted:presence"),
		pinned("root-b", "strengthened"),
		{Type: audit.TypePolicyFloorHeld, Run: "r", Fields: map[string]any{"floor": floor("held-last"), "by": "held-last"}},
	}
}

// benchProject returns a project directory whose audit log has n
// records (MCPEPOCH_BENCH_RECORDS, default 300,000: about 126 MB) with
// pinEvents spread over it.
func benchProject(b *testing.B) string {
	n := 300_000
	if v, err := strconv.Atoi(os.Getenv("MCPEPOCH_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	dir := b.TempDir()
	p := layout.Audit(dir)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		b.Fatal(err)
	}
	audittest.WriteLog(b, p, n, pinEvents()...)
	fi, err := os.Stat(p)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	return dir
}

// BenchmarkReadPriorPin measures what a host start with nothing enrolled
// (or no floor file), mcpepoch policy and doctor read of a large log.
func BenchmarkReadPriorPin(b *testing.B) {
	dir := benchProject(b)
	done := audittest.CPU(b)
	for b.Loop() {
		if p := readPriorPin(dir); len(p.roots) != 2 {
			b.Fatalf("roots %v", p.roots)
		}
	}
	done()
}

// BenchmarkLastHeldFloor measures the floor a host start checks its floor
// file against, from a large log.
func BenchmarkLastHeldFloor(b *testing.B) {
	dir := benchProject(b)
	done := audittest.CPU(b)
	for b.Loop() {
		if f := LastHeld(dir); f == nil || f.UpdatedBy != "held-last" {
			b.Fatalf("floor %+v", f)
		}
	}
	done()
}

// BenchmarkReadPrior measures what a host start with a floor file and
// nothing enrolled reads of a large log: the pins and the last floor
// held, in one pass.
func BenchmarkReadPrior(b *testing.B) {
	dir := benchProject(b)
	done := audittest.CPU(b)
	for b.Loop() {
		if p, f := readPrior(dir, true); len(p.roots) != 2 || f == nil || f.UpdatedBy != "held-last" {
			b.Fatalf("roots %v, floor %+v", p.roots, f)
		}
	}
	done()
}
