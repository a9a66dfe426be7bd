package audit

import (
	"strings"
	"testing"
)

// TestVerifyNamesCallsWithoutOutcome: a tool_called (request_forwarded)
// record with no tool_result (request_result), and no call_aborted naming
// its request, after it is a no-outcome warning on its line; one paired
// with either is not, nor is
// a call_aborted of a call that was never sent (no request_id) taken as
// the end of a call that was. The chain still verifies.
func TestVerifyNamesCallsWithoutOutcome(t *testing.T) {
	l, path := openTemp(t)
	ev := func(typ, run, tool string, extra ...string) Event {
		f := map[string]any{FieldTool: tool}
		for i := 0; i+1 < len(extra); i += 2 {
			f[extra[i]] = extra[i+1]
		}
		return Event{Type: typ, Epoch: "01EPOCH", Run: run, Fields: f}
	}
	req := func(typ, method string, extra ...string) Event {
		e := ev(typ, "r1", "", extra...)
		delete(e.Fields, FieldTool)
		e.Fields[FieldMethod] = method
		return e
	}
	for _, e := range []Event{
		ev(TypeToolCalled, "r1", "answered"),                                // 1
		ev(TypeToolCalled, "r1", "held"),                                    // 2
		ev(TypeToolResult, "r1", "answered"),                                // 3
		ev(TypeCallAborted, "r1", "held", "reason", "cancelled while held"), // 4: not this call's end
		ev(TypeToolCalled, "r1", "aborted"),                                 // 5
		ev(TypeCallAborted, "r1", "aborted", FieldRequestID, "7"),           // 6
		ev(TypeToolCalled, "r2", "answered"),                                // 7: another host's call
		ev(TypeToolCalled, "r1", "answered"),                                // 8
		ev(TypeToolResult, "r1", "answered"),                                // 9
		req(TypeRequestForwarded, "resources/read"),                         // 10
		req(TypeRequestForwarded, "prompts/get"),                            // 11
		req(TypeRequestResult, "resources/read"),                            // 12
		req(TypeRequestForwarded, "logging/setLevel"),                       // 13
		req(TypeCallAborted, "logging/setLevel", FieldRequestID, "9"),       // 14
	} {
		if _, err := l.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	rep := mustVerify(t, path)
	expectFindings(t, "warnings", rep.Warnings)
	expectFindings(t, "warnings", rep.NoOutcome, "no-outcome 2 2", "no-outcome 7 7", "no-outcome 11 11")
	if msg := rep.NoOutcome[1].Error(); !strings.HasPrefix(msg, path+":7: seq 7: ") || !strings.Contains(msg, "tool_called answered (run r2, epoch 01EPOCH) has no tool_result or call_aborted after it") ||
		!strings.Contains(msg, "outcome is unknown") {
		t.Errorf("warning: %s", msg)
	}
}

// TestVerifyRequestWithoutOutcomeMessage: the warning for a request other
// than tools/call names its method and the end record it lacks.
func TestVerifyRequestWithoutOutcomeMessage(t *testing.T) {
	l, path := openTemp(t)
	if _, err := l.Append(Event{Type: TypeRequestForwarded, Epoch: "01EPOCH", Run: "r1", Fields: map[string]any{FieldMethod: "prompts/get", "name": "p"}}); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, path)
	if len(rep.NoOutcome) != 1 || !strings.Contains(rep.NoOutcome[0].Error(), "request_forwarded prompts/get (run r1, epoch 01EPOCH) has no request_result or call_aborted after it") {
		t.Errorf("warnings %v", rep.NoOutcome)
	}
}
