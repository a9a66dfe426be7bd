package host

import (
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/epoch"
)

// toolCalled queues the tool_called record of a tools/call, the record
// its forwarding waits for (guard, with now), and returns its ticket:
// the tool, the keyed digest of its arguments and the grant it runs
// under (none: ""). Its fields are a list, not a map: one per call.
func (a *auditor) toolCalled(ep epoch.Epoch, run epoch.RunID, tool, argsDigest, grantID string, now bool) int64 {
	attrs := make([]audit.Attr, 2, 3)
	attrs[0] = audit.Attr{Key: audit.FieldTool, Value: tool}
	attrs[1] = audit.Attr{Key: audit.FieldArgsDigest, Value: argsDigest}
	if grantID != "" {
		attrs = append(attrs, audit.Attr{Key: "grant", Value: grantID})
	}
	ev := audit.Event{Type: audit.TypeToolCalled, Epoch: string(ep), Run: string(run), Attrs: attrs, Time: time.Now(), Guards: true}
	return a.queue(ev, now)
}

// toolResult queues the tool_result record of a tools/call's answer: the
// tool, whether the result is an error (isError) and how long the call
// took, in whole milliseconds, as a decimal string.
func (a *auditor) toolResult(ep epoch.Epoch, run epoch.RunID, tool string, isError bool, durationMS string) {
	attrs := []audit.Attr{{Key: audit.FieldTool, Value: tool}, {Key: "is_error", Value: isError}, {Key: "duration_ms", Value: durationMS}}
	a.queue(audit.Event{Type: audit.TypeToolResult, Epoch: string(ep), Run: string(run), Attrs: attrs, Time: time.Now()}, false)
}
