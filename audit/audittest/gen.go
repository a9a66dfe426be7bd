// Package audittest writes large, valid audit logs for tests and
// benchmarks of the code that reads them: host start, mcpepoch policy,
// doctor and audit verify, whose cost grows with the log.
package audittest

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
)

// Start is the time of the first record WriteLog writes; each later record
// is one millisecond after the one before.
var Start = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// WriteLog writes a log of about n records at path (and its head file)
// through audit.Open, Write and Sync, as a host writes it: every 500
// records a host start (client_connected, server_started,
// catalog_published), and between them pairs of tool_called and
// tool_result, about 420 bytes a record on average. The events of special
// are spread evenly over the log, in order, each in place of a pair. It
// returns the log's head. A log already at path is appended to.
func WriteLog(tb testing.TB, path string, n int, special ...audit.Event) audit.Head {
	tb.Helper()
	at := Start
	l, err := audit.Open(path, &audit.Options{Now: func() time.Time { at = at.Add(time.Millisecond); return at }})
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	every := n / (len(special) + 1)
	next, host := every, 0
	var batch []audit.Event
	for i := 0; i < n; {
		switch {
		case len(special) > 0 && every > 0 && i >= next:
			batch = append(batch, special[0])
			special, next = special[1:], next+every
			i++
		case i >= host:
			batch = append(batch, start(i)...)
			i, host = i+3, host+500
		default:
			batch = append(batch, call(i)...)
			i += 2
		}
		if len(batch) >= audit.MaxBatch-4 {
			flush(tb, l, &batch)
		}
	}
	batch = append(batch, special...) // n too small to spread them
	flush(tb, l, &batch)
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	h, ok, err := audit.ReadHead(audit.HeadPath(path))
	if err != nil || !ok {
		tb.Fatalf("the head of %s after writing it: %v (found %v)", path, err, ok)
	}
	return h
}

func flush(tb testing.TB, l *audit.Log, batch *[]audit.Event) {
	tb.Helper()
	if len(*batch) == 0 {
		return
	}
	if _, err := l.Write(*batch); err != nil {
		tb.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		tb.Fatal(err)
	}
	*batch = (*batch)[:0]
}

// ids returns the run and epoch of the host that wrote record i.
func ids(i int) (run, epoch string) {
	h := i / 500
	return fmt.Sprintf("01JQ8Z5K2M7N4P6Q8R%08d", h), fmt.Sprintf("01JQ8Z5K2M7N4P6Q8S%08d", h)
}

// digest returns a digest-shaped string that differs with i.
func digest(kind string, i int) string {
	return fmt.Sprintf("%s:%064x", kind, uint64(i)*0x9e3779b97f4a7c15)
}

func start(i int) []audit.Event {
	run, ep := ids(i)
	return []audit.Event{
		{Type: audit.TypeClientConnected, Run: run, Fields: map[string]any{"client": "claude-code", "client_version": "2.1.3", "protocol": "2025-06-18"}},
		{Type: audit.TypeServerStarted, Epoch: ep, Run: run, Fields: map[string]any{
			"command": "node dist/server.js", "entry": digest("sha256", i), "pid": 4242 + i%30000, "lockfile": digest("sha256", i+1),
			"deps": digest("sha256", i+2), "runtime": "node v22.11.0 " + digest("sha256", i+3), "wd": filepath.Join("/home", "dev", "inventory")}},
		{Type: audit.TypeCatalogPublished, Epoch: ep, Run: run, Fields: map[string]any{
			"revision": digest("sha256", i+4), "tools": []any{"read_file", "write_file", "search", "list_dir", "echo"}}},
	}
}

func call(i int) []audit.Event {
	run, ep := ids(i)
	tool := [...]string{"read_file", "write_file", "search", "list_dir", "echo"}[i%5]
	called := []audit.Attr{{Key: audit.FieldTool, Value: tool}, {Key: audit.FieldArgsDigest, Value: digest("hmac-sha256", i)}}
	if i%3 == 0 {
		called = append(called, audit.Attr{Key: "grant", Value: fmt.Sprintf("g-01JQ8Z5K2M7N4P6Q8T%06d", i%1000)})
	}
	return []audit.Event{
		{Type: audit.TypeToolCalled, Epoch: ep, Run: run, Attrs: called},
		{Type: audit.TypeToolResult, Epoch: ep, Run: run, Attrs: []audit.Attr{
			{Key: audit.FieldTool, Value: tool}, {Key: "is_error", Value: i%17 == 0}, {Key: "duration_ms", Value: fmt.Sprint(i % 900)},
			{Key: "bytes", Value: fmt.Sprint(200 + i%5000)}}},
	}
}
