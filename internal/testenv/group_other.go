//go:build unix && !linux

package testenv

// liveMembers cannot tell zombies from live processes without /proc: a group
// that kill(-pgid, 0) still reaches counts as alive.
func liveMembers(pgid int) (gone bool, detail string) {
	return false, "kill(-pgid, 0) still reaches a process of the group"
}
