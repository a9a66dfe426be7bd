package audit

import (
	"cmp"
	"fmt"
	"slices"
)

// Calls without an outcome: Verify pairs each record of a call sent to a
// server (tool_called) with the record of its end that follows it in the
// log (tool_result, or a call_aborted that names the request), and names
// in a WarnNoOutcome
// warning each one left unpaired at the end of the log. A host writes the
// end record once the server answered, after the client may already have
// the answer; a host killed in between leaves the action with no end: it
// ran, and what it returned is not in the log.

// outcomeKey is what an action record and the record of its end share:
// the host that wrote both (run), the epoch that ran it and the tool.
// A JSON-RPC id is not in every record, so actions of one key pair with
// ends first in, first out: which of two concurrent calls of one tool
// lacks its end may be mistaken, never how many do.
type outcomeKey struct {
	run, epoch, tool string
}

// openAction is an action record not yet paired with its end.
type openAction struct {
	line int
	seq  int64
	typ  string
}

// outcomes pairs actions with their ends in log order.
type outcomes struct {
	open map[outcomeKey][]openAction
}

// note takes one record into account.
func (o *outcomes) note(rec Record) {
	key, ok := actionKey(rec)
	if !ok {
		return
	}
	switch rec.Type {
	case TypeToolCalled:
		if o.open == nil {
			o.open = make(map[outcomeKey][]openAction)
		}
		o.open[key] = append(o.open[key], openAction{line: rec.Line, seq: rec.Seq, typ: rec.Type})
	default:
		if q := o.open[key]; len(q) > 0 {
			if len(q) == 1 {
				delete(o.open, key)
			} else {
				o.open[key] = q[1:]
			}
		}
	}
}

// actionKey returns the key of an action record or of the record of its
// end, and false for any other record. A call_aborted counts as an end
// only when it names the request (request_id): one written for a call
// still waiting for approval or for the catalog ends a call that was
// never sent, which has no action record.
func actionKey(rec Record) (outcomeKey, bool) {
	tool, _ := rec.Fields[FieldTool].(string)
	k := outcomeKey{run: rec.Run, epoch: rec.Epoch, tool: tool}
	switch rec.Type {
	case TypeToolCalled, TypeToolResult:
		return k, tool != ""
	case TypeCallAborted:
		_, named := rec.Fields[FieldRequestID]
		return k, named && tool != ""
	}
	return k, false
}

// warnings returns a WarnNoOutcome warning for each action left open, in
// log order.
func (o *outcomes) warnings() []Problem {
	var out []Problem
	for k, q := range o.open {
		for _, a := range q {
			out = append(out, Problem{Kind: WarnNoOutcome, Line: a.line, Seq: a.seq,
				Msg: fmt.Sprintf("%s %s (run %s, epoch %s) has no %s or %s after it: the server got the call, and its outcome is unknown (its host was killed before writing the answer's record, or the call is still in flight)",
					a.typ, printable(k.tool), printable(orDash(k.run)), printable(orDash(k.epoch)), TypeToolResult, TypeCallAborted)})
		}
	}
	slices.SortFunc(out, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
	return out
}
