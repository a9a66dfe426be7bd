package audit

import (
	"cmp"
	"fmt"
	"slices"
)

// Calls without an outcome: Verify pairs each record of a request sent
// to a server (tool_called, request_forwarded) with the record of its end
// that follows it in the log (tool_result, request_result, or a
// call_aborted that names the request), and names in a WarnNoOutcome
// warning each one left unpaired at the end of the log. A host writes the
// end record once the server answered, after the client may already have
// the answer; a host killed in between leaves the request with no end: it
// ran, and what it returned is not in the log.

// outcomeKey is what the record of a request and the record of its end
// share: the host that wrote both (run), the epoch that ran it and what
// was asked (a tool, or the method of a request other than tools/call).
// A JSON-RPC id is not in every record, so requests of one key pair with
// ends first in, first out: which of two concurrent calls of one tool
// lacks its end may be mistaken, never how many do.
type outcomeKey struct {
	run, epoch, tool, method string
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
	case TypeToolCalled, TypeRequestForwarded:
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

// actionKey returns the key of a request's record or of the record of
// its end, and false for any other record. A call_aborted counts as an
// end only when it names the request (request_id): one written for a call
// still waiting for approval or for the catalog ends a call that was
// never sent, which has no record of its own.
func actionKey(rec Record) (outcomeKey, bool) {
	tool, _ := rec.Fields[FieldTool].(string)
	method, _ := rec.Fields[FieldMethod].(string)
	k := outcomeKey{run: rec.Run, epoch: rec.Epoch}
	switch rec.Type {
	case TypeToolCalled, TypeToolResult:
		k.tool = tool
		return k, tool != ""
	case TypeRequestForwarded, TypeRequestResult:
		k.method = method
		return k, method != ""
	case TypeCallAborted:
		if _, named := rec.Fields[FieldRequestID]; !named {
			return k, false
		}
		if tool != "" {
			k.tool = tool
		} else {
			k.method = method
		}
		return k, tool != "" || method != ""
	}
	return k, false
}

// warnings returns a WarnNoOutcome warning for each action left open, in
// log order.
func (o *outcomes) warnings() []Problem {
	var out []Problem
	for k, q := range o.open {
		what, end := k.tool, TypeToolResult
		if k.tool == "" {
			what, end = k.method, TypeRequestResult
		}
		for _, a := range q {
			out = append(out, Problem{Kind: WarnNoOutcome, Line: a.line, Seq: a.seq,
				Msg: fmt.Sprintf("%s %s (run %s, epoch %s) has no %s or %s after it: the server got the request, and its outcome is unknown (its host was killed before writing the answer's record, or the request is still in flight)",
					a.typ, printable(what), printable(orDash(k.run)), printable(orDash(k.epoch)), end, TypeCallAborted)})
		}
	}
	slices.SortFunc(out, func(a, b Problem) int { return cmp.Compare(a.Line, b.Line) })
	return out
}
