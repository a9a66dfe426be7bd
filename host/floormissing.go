package host

import (
	"path/filepath"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/floor"
	"github.com/mcpepoch/mcpepoch/trust"
)

// storeMissing compares this host's trust store, empty, with what the
// project's audit log says earlier hosts pinned, when a floor was found
// (floorMissing covers the floor gone too). When an earlier host pinned a
// root, the empty store is not "nothing enrolled": the host logs it, keeps
// it for status and the trust_store_missing record, and makes presence
// the default proof. Runs before any goroutine.
func (h *Host) storeMissing() {
	if h.enrolled || h.pres.pinnedStore == nil {
		return // something enrolled, or the store could not be read (presence already)
	}
	// The floor was found: checkStartFloor reads the floor last held
	// next, taken here in the same pass over the log.
	p := floor.ReadPrior(h.opts.Dir)
	h.floor.heldAtStart, h.floor.heldRead = p.LastHeldFloor(), true
	note := p.StoreGoneNote(h.pres.dir)
	if note == "" {
		return
	}
	h.floor.missing, h.floor.storeGone = note, p
	h.enrolled = true
	h.logf("%s", note)
}

// auditMissingLocked writes the record of what went missing at start:
// policy_floor_missing for the floor, trust_store_missing (the store path,
// the last root pinned and its store's path and digest) for the store.
func (h *Host) auditMissingLocked() {
	switch {
	case h.floor.missing == "":
	case h.floor.storeGone != nil:
		root, store, digest := h.floor.storeGone.LastRoot()
		h.audit.event(audit.TypeTrustStoreMissing, "", h.run, map[string]any{"reason": h.floor.missing,
			"path": filepath.Join(h.pres.dir, trust.FileName), "last_root": root, "last_store": store, "last_store_digest": digest})
	default:
		h.audit.event(audit.TypePolicyFloorMissing, "", h.run, map[string]any{"reason": h.floor.missing, "path": h.pres.dir})
	}
}

// floorPin returns the path and digest of the floor file in force ("" and
// "" without a project or store directory).
func (h *Host) floorPin() (path, digest string) {
	if h.opts.Dir == "" || h.pres.dir == "" {
		return "", ""
	}
	path = trust.FloorPath(h.pres.dir, trust.FloorRoot(h.opts.Dir))
	return path, floor.FileDigest(path)
}
