package host

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/approval"
	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/floor"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/trust"
)

// floorState is the project's policy floor as this host holds it
// (trust.Floor): read once at start, after the trust store; raised by an
// edit of mcpepoch.toml that strengthens the policy, never lowered by
// one. A change of the floor file while the host runs is not read: like
// the trust store's digest, the floor is pinned for the host's life.
// Guarded by Host.mu.
type floorState struct {
	floor *trust.Floor // nil: no project directory, or the floor is unknown
	// weak lists what the file says that is not in force, as last read.
	weak []trust.Weakening
	// missing: why the floor or the trust root an earlier host ran with
	// is not found (floor.MissingNote); "" when nothing went missing.
	missing string
	// refused: the digest of the floor file last refused
	// (policy_floor_refused), so that it is said once; refusedAtStart
	// the record of a refusal at start, before the audit log is open.
	refused        string
	refusedAtStart map[string]any
	// storeGone: what the audit log says of the trust root that went
	// missing while the floor was found (trust_store_missing); nil else.
	storeGone *floor.Prior
	// heldAtStart is the last floor the audit log says a host held, when
	// storeMissing read it in the same pass as the prior pins (heldRead),
	// for checkStartFloor, which else reads it itself.
	heldAtStart *trust.Floor
	heldRead    bool
	// save: floor can be written (false when its file could not be read,
	// so a corrupt or foreign file is kept for a person to look at).
	save bool
	// accepted: a person accepted the weakenings held (mcpepoch policy
	// accept) in a floor file the host takes at its next epoch
	// (noteAcceptedFloor); reset whenever the floor or the weakenings
	// held change.
	accepted bool
}

// applyFloor reads the project's floor at start, after openTrust, and
// puts in force the policy mcpepoch.toml sets with every weakening
// replaced by the floor's value (Options.Policy, Options.AllowSelfReload,
// the credential scopes' approval settings and their delivery: a scope
// the floor delivers through the broker is not put in the server's
// environment, whatever the file says; and Options.Spec's code, deps,
// lockfiles, data, env_files and env, what every identity of this host
// covers). The delivery and the identity settings are read here only:
// a change of it while the host runs waits for a new connection. The first start for a project
// makes the file's policy its floor (trust on first use). A floor file
// weaker than the last floor a host held, with no acceptance that holds,
// is refused (checkStartFloor). Runs before any goroutine.
func (h *Host) applyFloor() {
	if h.opts.Dir == "" {
		return
	}
	cfg, err := config.Load(h.opts.Dir)
	if err != nil {
		// The caller loaded it already; a file gone since keeps the policy
		// built from it. What the identity covers cannot be checked
		// against the floor then: it covers the most (the strictest).
		strict := &config.Config{}
		trust.StrictestIdentity(specIdentity(strict, h.opts.Spec)).SetIn(strict)
		h.applyIdentity(strict)
		h.logf("policy floor: %s: %v: the identity covers what mcpepoch infers (code, deps and lockfiles unset, no data)", config.FileName, err)
		return
	}
	// The identity settings are those the caller's Spec carries (read from
	// the same file, perhaps an instant earlier): the floor is settled
	// with what this host would hash, whatever the file says now.
	cfg = specIdentity(cfg, h.opts.Spec)
	root := trust.FloorRoot(h.opts.Dir)
	var f *trust.Floor
	if h.pres.dir != "" {
		f, err = trust.LoadFloor(h.pres.dir, root)
	}
	switch {
	case h.pres.dir == "":
		// No config directory to hold the floor (no entry for the user
		// in the account database, or no absolute home there;
		// userdirs): as a floor that went missing.
		s := floor.Strictest(root, cfg)
		f = &s
		_, derr := trust.DefaultDir()
		h.floor.missing = fmt.Sprintf("policy floor missing: this host has no usable config directory to hold it (%v): "+
			"until that is fixed, only presence counts, nothing is exempt, "+
			"self-reload is off and every credential scope needs an approval per call", strings.TrimPrefix(fmt.Sprint(derr), "trust store: "))
		h.enrolled = true
		h.logf("%s", h.floor.missing)
	case err != nil:
		h.logf("policy floor: %v: until it is fixed, only presence counts, nothing is exempt, self-reload is off and every credential scope needs an approval per call and is delivered through the broker", err)
		s := floor.Strictest(root, cfg)
		f = &s
	case f == nil && h.floorMissing():
		s := floor.Strictest(root, cfg)
		f = &s
	case f == nil:
		if f, h.floor.save = h.firstUse(root, cfg); f == nil {
			return // the file's identity settings, as the caller's Spec has them
		}
	default:
		h.floor.save = true
		h.storeMissing() // first: it sets the default proof the check counts with
		f = h.checkStartFloor(f)
	}
	eff, next, weak := f.Reconcile(cfg, h.enrolled)
	h.floor.floor, h.floor.weak = f, weak
	h.applyIdentity(eff)
	h.raiseFloorLocked(next)
	if len(weak) > 0 {
		// Without a weakening, the policy Options carries (built from the
		// same file) is the one in force.
		h.policy = grant.NewPolicy(eff)
		h.opts.AllowSelfReload = eff.AllowSelfReload
		h.applyDeliveryLocked(eff)
		h.logWeakLocked()
	}
}

// specIdentity returns a copy of cfg with the identity settings of s
// (build.Spec's Code, Deps, Lockfiles, Data, EnvFiles, EnvNames).
func specIdentity(cfg *config.Config, s build.Spec) *config.Config {
	c := *cfg
	c.Code, c.Deps, c.Lockfiles, c.Data, c.EnvFiles, c.Env = s.Code, s.Deps, s.Lockfiles, s.Data, s.EnvFiles, s.EnvNames
	return &c
}

// applyIdentity puts in Options.Spec the identity settings in force, eff's:
// the settings of mcpepoch.toml that
// decide what the identity hashes, held at the floor (trust.IdentityFloor),
// so that a weakening no person accepted never narrows what this host
// hashes. Runs before any goroutine: Options.Spec is read-only after.
func (h *Host) applyIdentity(eff *config.Config) {
	s := &h.opts.Spec
	s.Code, s.Deps, s.Lockfiles, s.Data, s.EnvFiles, s.EnvNames = eff.Code, eff.Deps, eff.Lockfiles, eff.Data, eff.EnvFiles, eff.Env
}

// firstUse makes cfg's policy the floor of the project at root and holds
// it (trust on first use), and returns nil; or, when another host wrote
// the floor since applyFloor looked (both under trust.LockFloors), returns
// that floor and true, for applyFloor to hold as found (the strictest
// floor and false when what it wrote cannot be read).
func (h *Host) firstUse(root string, cfg *config.Config) (*trust.Floor, bool) {
	if unlock, err := trust.LockFloors(h.pres.dir); err != nil {
		h.logf("%v", err)
	} else {
		defer unlock()
	}
	switch f, err := trust.LoadFloor(h.pres.dir, root); {
	case err != nil:
		h.logf("policy floor: %v: until it is fixed, the strictest floor is in force", err)
		s := floor.Strictest(root, cfg)
		return &s, false
	case f != nil:
		return f, true
	}
	s := trust.FloorOf(root, cfg)
	if err := trust.WriteFloor(h.pres.dir, &s, "first_use", time.Now()); err != nil {
		h.logf("policy floor: %v", err)
	}
	h.logf("policy floor: first use of this project: the grants policy of %s is its floor from now on", config.FileName)
	h.floor = floorState{floor: &s, save: true}
	return nil, true
}

// floorMissing compares what this host found, no floor file (and
// perhaps no authenticator), with what the project's audit log says
// earlier hosts ran with (floor.MissingNote). When the floor went missing
// it logs it, keeps it for status and the policy_floor_missing record,
// makes presence the default proof, and reports true. The log is read
// only here, when no floor is found. Runs before any goroutine.
func (h *Host) floorMissing() bool {
	note := floor.MissingNote(h.opts.Dir, h.pres.dir, false, h.enrolled)
	if note == "" {
		return false
	}
	h.floor.missing = note
	h.enrolled = true // the default proof is presence, as with an unreadable store
	h.logf("policy floor: %s", note)
	return true
}

// applyDeliveryLocked puts eff's delivery of each credential scope in
// Options.Credentials (a copy: the caller's map is left as it was).
func (h *Host) applyDeliveryLocked(eff *config.Config) {
	creds := maps.Clone(h.opts.Credentials)
	for name, c := range creds {
		if e, ok := eff.Credentials[name]; ok && e.Delivery() != c.Delivery() {
			c.Deliver = e.Delivery()
			creds[name] = c
		}
	}
	h.opts.Credentials = creds
}

// raiseFloorLocked makes next the floor when it differs from the one held
// (the file strengthened the policy), and writes it.
func (h *Host) raiseFloorLocked(next trust.Floor) {
	if h.floor.floor == nil || h.floor.floor.Same(next) || h.floor.missing != "" {
		// A missing floor's stand-in is the strictest: nothing raises it,
		// and what differs from it is only how the file says the same.
		return
	}
	h.logf("policy floor: raised by %s: %s", config.FileName, floor.Text(next, h.enrolled))
	if h.floor.save {
		if unlock, err := trust.LockFloors(h.pres.dir); err != nil {
			h.logf("%v", err)
		} else {
			defer unlock()
		}
		if cur, err := trust.LoadFloor(h.pres.dir, next.Root); err == nil && cur != nil && cur.Same(next) {
			// Another host raised it the same way: hold what the file
			// says, so that an acceptance made from it counts here too.
			next = *cur
		} else if err := trust.WriteFloor(h.pres.dir, &next, "strengthened", time.Now()); err != nil {
			h.logf("policy floor: %v", err)
		}
	}
	h.floor.floor, h.floor.accepted = &next, false
	h.floorHeldLocked()
}

// adoptAcceptedFloor reads the project's floor file again, on a build
// signal, and makes it the floor held when mcpepoch policy accept wrote it
// since and its acceptance holds (checkAcceptance: in place of exactly the
// floor held, at a level that floor counts, and for presence signed by an
// authenticator of the pinned trust store); it reports whether it did, so
// that the caller reconciles mcpepoch.toml with it. A file marked as
// accepted whose acceptance does not hold is refused: logged once,
// audited policy_floor_refused, and the floor held stays. Any other
// change of the file while the host runs is not read: the floor stays
// pinned.
func (h *Host) adoptAcceptedFloor() bool {
	h.mu.Lock()
	held, save := h.floor.floor, h.floor.save
	h.mu.Unlock()
	if held == nil || !save {
		return false
	}
	f, err := trust.LoadFloor(h.pres.dir, held.Root)
	if err != nil || f == nil || !strings.HasPrefix(f.UpdatedBy, trust.AcceptedBy) || f.Digest() == held.Digest() {
		return false
	}
	why := h.checkAcceptance(*held, *f)
	h.mu.Lock()
	defer h.mu.Unlock()
	if why != nil {
		h.refuseFloorLocked(*f, why)
		return false
	}
	h.floor.floor, h.floor.accepted = f, false
	h.floorHeldLocked()
	h.logf("policy floor: accepted by a person (%s, %s): %s", strings.TrimPrefix(f.UpdatedBy, trust.AcceptedBy),
		f.UpdatedAt.Local().Format(time.DateTime), floor.Text(*f, h.enrolled))
	return true
}

// reconcileLocked compares a re-read cfg with the floor: it returns cfg
// with each weakening replaced by the floor's value, raises the floor by
// what strengthens it, and remembers, logs and audits the weakenings.
// strengthened reports whether the floor was raised.
func (h *Host) reconcileLocked(cfg *config.Config) (eff *config.Config, strengthened bool) {
	if h.floor.floor == nil {
		return cfg, false
	}
	before := *h.floor.floor
	eff, next, weak := h.floor.floor.Reconcile(cfg, h.enrolled)
	changed := !slices.Equal(weak, h.floor.weak)
	h.floor.weak = weak
	if changed {
		h.floor.accepted = false
	}
	h.raiseFloorLocked(next)
	if changed {
		h.logWeakLocked()
		h.auditWeakLocked("reread")
	}
	return eff, !before.Same(*h.floor.floor)
}

// revokeOutrankedLocked ends each live grant the policy in force, just
// raised, no longer counts (grant.Policy.Outranks): a grant approved at a
// proof level the stricter policy does not count, by an authenticator
// whose attestation grants.attestation = "required" does not count, or
// for a tool that now needs a decision per call or a credential scope the
// grant does not name. Each is audited grant_revoked with reason
// policy_raised and why; the next call it would have covered is refused,
// saying so. It returns the grants it revoked (their renewal:
// renewRaisedLocked).
func (h *Host) revokeOutrankedLocked() []*grant.Grant {
	now := time.Now()
	var revoked []*grant.Grant
	for _, g := range h.grants.Live(now) {
		why := h.policy.Outranks(g, h.enrolled)
		if why == "" && g.Proof == approval.ProofPresence {
			// Attestation is known here, not to grant.Policy: the pinned store.
			if err := h.checkAttestedLocked(approval.Proven{Proof: g.Proof, Authenticator: g.Authenticator}); err != nil {
				why = "approved with presence by an authenticator that no longer counts: " + err.Error()
			}
		}
		if why == "" || !h.grants.Revoke(g.ID, grant.RevokedPolicyRaised, now) {
			continue
		}
		revoked = append(revoked, g)
		h.audit.event(audit.TypeGrantRevoked, g.ExecutionEpoch, h.run, map[string]any{
			"grant": g.ID, "reason": grant.RevokedPolicyRaised, "why": why, "file": config.FileName,
		})
		h.logf("grant %s revoked: %s raised the approval policy: %s", g.ID, config.FileName, why)
	}
	if len(revoked) > 0 {
		h.saveGrantsLocked()
	}
	return revoked
}

// epochLocked is the current child's epoch, "" before the first start.
func (h *Host) epochLocked() epoch.Epoch {
	if h.child == nil {
		return ""
	}
	return h.child.epoch
}

// logWeakLocked says on stderr what of mcpepoch.toml is not in force.
func (h *Host) logWeakLocked() {
	if len(h.floor.weak) == 0 {
		return
	}
	h.logf("%s", h.weakNoteLocked(h.floor.weak))
}

// auditWeakLocked records a policy_not_applied record for the weakenings
// held, read at start or on a re-read (when).
func (h *Host) auditWeakLocked(when string) {
	if len(h.floor.weak) == 0 {
		return
	}
	list := make([]map[string]any, len(h.floor.weak))
	for i, w := range h.floor.weak {
		list[i] = map[string]any{"setting": w.Setting, "file": w.File, "in_force": w.Floor}
	}
	h.audit.event(audit.TypePolicyNotApplied, h.epochLocked(), h.run, map[string]any{
		"read": when, "settings": list, "file": config.FileName,
	})
}

// policyNotApplied returns the weakenings held, for status.
func (h *Host) policyNotApplied() []localapi.PolicyWeakening {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []localapi.PolicyWeakening
	for _, w := range h.floor.weak {
		out = append(out, localapi.PolicyWeakening{Setting: w.Setting, File: w.File, InForce: w.Floor, Accepted: h.floor.accepted})
	}
	return out
}
