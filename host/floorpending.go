package host

import (
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/floor"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/trust"
)

// noteAcceptedFloor reads the project's floor file and remembers
// (floorState.accepted) whether it holds what mcpepoch policy accept
// wrote since the floor held was read, with an acceptance that holds
// (checkAcceptance) and that covers every weakening of mcpepoch.toml
// held: the host puts it in force from its next epoch (rereadConfig on
// a build signal or mcpepoch restart), and until then status and the
// refusals say it was accepted rather than ask a person to accept it
// again. It changes no policy. Called without h.mu (it reads files): by
// status, which policy accept asks of every running host of the project
// after it wrote the floor.
func (h *Host) noteAcceptedFloor() {
	h.mu.Lock()
	held, weak, save := h.floor.floor, len(h.floor.weak) > 0, h.floor.save
	h.mu.Unlock()
	if held == nil || !weak || !save || h.opts.Dir == "" {
		return
	}
	accepted := false
	f, err := trust.LoadFloor(h.pres.dir, held.Root)
	if err == nil && f != nil && strings.HasPrefix(f.UpdatedBy, trust.AcceptedBy) && f.Digest() != held.Digest() &&
		h.checkAcceptance(*held, *f) == nil {
		if cfg, err := config.Load(h.opts.Dir); err == nil {
			_, _, left := f.Reconcile(cfg, h.enrolled)
			accepted = len(left) == 0
		}
	}
	h.mu.Lock()
	if h.floor.floor == held {
		h.floor.accepted = accepted
	}
	h.mu.Unlock()
}

// weakNoteLocked is floor.WeakNote, or, when a person accepted the weakenings
// since (noteAcceptedFloor), the line that says so and when they are in
// force.
func (h *Host) weakNoteLocked(weak []trust.Weakening) string {
	s := make([]string, len(weak))
	for i, w := range weak {
		s[i] = w.String()
	}
	if h.floor.missing != "" {
		// What differs is the strictest floor standing in for the one not
		// found, not an edit of the file.
		return "not in force while no policy floor is found (the strictest policy stands in for it, whatever " + config.FileName + " says): " + strings.Join(s, "; ")
	}
	if !h.floor.accepted {
		return floor.WeakNote(weak)
	}
	when := "in force from the next epoch (" + selfcmd.Name() + " restart)"
	var id []string
	for _, w := range weak {
		if slices.Contains(trust.IdentitySettings, w.Setting) {
			id = append(id, w.Setting)
		}
	}
	if len(id) > 0 {
		// What the identity covers is read once, when a host starts.
		when += "; " + strings.Join(id, ", ") + " when the host starts again (reconnect the client)"
	}
	return config.FileName + " weakens the project's policy floor: " + strings.Join(s, "; ") +
		"; accepted by a person (" + selfcmd.Name() + " policy accept), " + when
}
