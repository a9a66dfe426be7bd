package host

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// The answers a tools/call (or another request the host records) gets
// instead of being forwarded while the audit log cannot be written
// (CodeAuditUnavailable), and the writer's health that decides them; see
// auditor in auditlog.go.

// refusal returns the error line for a tools/call m while the audit log
// cannot be written, or nil when it can.
func (a *auditor) refusal(m *jsonrpc.Message) []byte {
	err := a.healthy()
	if err == nil {
		return nil
	}
	return a.refusalFor(m, err.(*auditDown))
}

// unrecorded returns the error line for a tools/call m whose tool_called
// record could not be written.
func (a *auditor) unrecorded(m *jsonrpc.Message) []byte {
	d, _ := a.healthy().(*auditDown)
	if d == nil {
		a.mu.Lock()
		d = a.last
		a.mu.Unlock()
	}
	if d == nil {
		d = &auditDown{file: a.log.Path(), cause: errors.New("the call's record could not be written"), since: time.Now()}
	}
	return a.refusalFor(m, d)
}

func (a *auditor) refusalFor(m *jsonrpc.Message, d *auditDown) []byte {
	return jsonrpc.ErrorLine(m.ID, CodeAuditUnavailable,
		"audit_unavailable: "+d.Error()+"; the call was not forwarded: a person fixes what stops the write (a full disk, the file's permissions, a process holding its lock; "+
			selfcmd.Cmd("status")+" shows the cause), and calls resume as soon as a write succeeds (the host tries every "+auditRetry.String()+")",
		map[string]any{"reason": "audit_unavailable", "method": m.Method, "requestId": m.ID,
			"file": d.file, "error": d.cause.Error(), "since": d.since.UTC().Format(time.RFC3339Nano)})
}

// healthy returns nil while the audit log can be written, else why not.
// A group that has been writing for longer than auditStuck counts as a
// failure while it waits.
func (a *auditor) healthy() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return a.err
	}
	if !a.writing.IsZero() && time.Since(a.writing) > auditStuck {
		return &auditDown{file: a.log.Path(), since: a.writing,
			cause: fmt.Errorf("a write has not completed for %v", time.Since(a.writing).Round(time.Second))}
	}
	return nil
}

// recoverLocked makes the writer healthy again after a write and a sync
// that succeeded.
func (a *auditor) recoverLocked() {
	var notes []string
	if errors.Is(a.err.cause, audit.ErrCut) {
		notes = append(notes, "the records cut from it are gone, named by its "+audit.TypeLogRecovered+" record")
	}
	if a.log.Gaps() > a.gaps {
		notes = append(notes, "what could not be written is recorded as "+audit.TypeRecordsLost)
	}
	note := "no record was lost"
	if len(notes) > 0 {
		note = strings.Join(notes, "; ")
	}
	a.logf("audit log %s: writing again after %v; %s", a.log.Path(), time.Since(a.err.since).Round(time.Millisecond), note)
	a.err = nil
}
