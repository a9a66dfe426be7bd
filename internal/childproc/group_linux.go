package childproc

import "github.com/mcpepoch/mcpepoch/internal/procstat"

// GroupHasLive scans /proc for a process of group pgid that is not a
// zombie. Orphans of the server are reparented to init or a subreaper, which
// may reap them late or never; waiting for their zombies would stall every
// stop by the whole grace period.
func GroupHasLive(pgid int) bool {
	live, err := procstat.GroupHasLive(pgid)
	return live || err != nil // cannot tell: assume alive, the caller's wait is bounded
}
