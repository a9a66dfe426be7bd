package host

import (
	"slices"

	"github.com/mcpepoch/mcpepoch/epoch"
)

// renewalForLocked returns the prepared renewal that covers a call of tool
// in epoch ep, when one exists (renewal.go): the approval the host then
// asks for through the MCP client (elicit.go) is that renewal as prepared,
// its tools and credential scopes, so that one press approves it and
// releases the call. Only a pre-selected tool counts: a tool whose
// definition changed is included by a person explicitly, never on a
// call's behalf, so its call asks for the tool alone. h.mu is held.
func (h *Host) renewalForLocked(ep epoch.Epoch, tool string) (ApproveRequest, bool) {
	r := h.renewal
	if r == nil || r.Epoch != ep || !slices.Contains(r.Tools, tool) {
		return ApproveRequest{}, false
	}
	return r.Request(nil, ""), true
}
