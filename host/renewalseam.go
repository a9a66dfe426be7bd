package host

import "github.com/mcpepoch/mcpepoch/epoch"

// renewalForLocked returns the prepared renewal that covers a call of tool
// in epoch ep, when one exists: the approval the host then asks for
// through the MCP client (elicit.go) is that renewal, its tools and
// credential scopes, so that one press approves it and releases the call.
// Without one it returns false, and the host asks for tool alone. h.mu is
// held; it must not block.
func (h *Host) renewalForLocked(ep epoch.Epoch, tool string) (ApproveRequest, bool) {
	return ApproveRequest{}, false
}
