package host

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
)

// TestAuditErrorAdvice: the host's refusal names audit verify once, whether
// or not the audit error under it already advises it.
func TestAuditErrorAdvice(t *testing.T) {
	for _, inner := range []error{
		&audit.CorruptError{Path: "a/audit.jsonl", Offset: 6471, Reason: "a line of 52428800 bytes is longer than 16777216 bytes"},
		errors.New("open a/audit.jsonl: permission denied"),
	} {
		msg := (&AuditError{Path: "a/audit.jsonl", Err: inner}).Error()
		if n := strings.Count(msg, "audit verify"); n != 1 {
			t.Errorf("%q names audit verify %d times", msg, n)
		}
		if !strings.Contains(msg, "move it aside") {
			t.Errorf("%q does not say to move the log aside", msg)
		}
	}
}
