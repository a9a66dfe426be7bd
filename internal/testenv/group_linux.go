package testenv

import (
	"fmt"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/procstat"
)

// liveMembers scans /proc for members of group pgid that are not zombies.
func liveMembers(pgid int) (gone bool, detail string) {
	all, err := procstat.All()
	if err != nil {
		return false, "kill(-pgid, 0) succeeds and /proc is unreadable: " + err.Error()
	}
	var live []string
	for _, st := range all {
		if st.PGID != pgid || st.Zombie() {
			continue // another group, or exited
		}
		live = append(live, fmt.Sprintf("pid %d (%s) state %s ppid %d", st.PID, st.Comm, st.State, st.PPID))
	}
	if len(live) == 0 {
		return true, ""
	}
	return false, strings.Join(live, "; ")
}
