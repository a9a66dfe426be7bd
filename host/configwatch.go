package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// configDigest returns the SHA-256 (hex) of mcpepoch.toml in dir, "absent"
// when there is none, or "unreadable" when it cannot be read.
func configDigest(dir string) string {
	b, err := safefile.ReadFile(filepath.Join(dir, config.FileName), config.MaxSize)
	switch {
	case err == nil:
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	case errors.Is(err, fs.ErrNotExist):
		return "absent"
	}
	return "unreadable"
}

// configState is what the host knows of mcpepoch.toml since it started.
// Guarded by Host.mu.
type configState struct {
	// read is the digest of the file as last read (configDigest): at the
	// start, then at each build signal that found it changed.
	read string
	// atStart is the file as the host started, without what the host
	// re-reads (withoutApproval); nil when there was none or it did not load.
	atStart *config.Config
	// next is the grants policy re-read from the file, applied when the
	// next epoch begins (nil: none waiting); nextChanges says how it
	// differs from the policy in force.
	next        *grant.Policy
	nextChanges []string
	// rest: the file changed settings the host does not re-read since the
	// start.
	rest bool
	// bad is why the file with digest badAt could not be loaded, or "".
	bad, badAt string
}

func newConfigState(dir string) configState {
	s := configState{read: configDigest(dir)}
	if dir == "" {
		return s
	}
	if cfg, err := config.Load(dir); err == nil {
		s.atStart = withoutApproval(cfg)
	}
	return s
}

// rereadConfig reads mcpepoch.toml again when it changed since it was last
// read: before every restart but a credential relaunch (replace), which
// every build signal makes (onBuild: the socket's or the manifest's), and
// on a failed build's signal. The
// approval settings are re-read, held at the policy floor: [grants]
// (exempt, proof, approval_wait) and each credential scope's tools,
// per_call and proof. A stricter policy is in force at once; any other
// that differs from the one in force waits for the next epoch, where
// grants are revoked anyway (applyPolicyLocked), so no grant or held call
// of the current epoch is decided by a weaker policy than the one it was
// made under. Everything else (command, the scopes' sources, host
// settings) was read once for this connection: the host says the client
// must reconnect. A floor a person accepted since (mcpepoch policy accept)
// is read first (adoptAcceptedFloor), and the file reconciled with it.
// It returns how many grants a stricter policy revoked.
func (h *Host) rereadConfig() (revoked int) {
	if h.opts.Dir == "" {
		return 0
	}
	d := configDigest(h.opts.Dir)
	h.mu.Lock()
	same := d == h.config.read
	h.mu.Unlock()
	if accepted := h.adoptAcceptedFloor(); !same || accepted {
		revoked = h.stageConfig(d)
	}
	if note := h.configChange(); note != "" {
		h.logf("%s", note)
	}
	return revoked
}

// stageConfig loads the changed file (digest d) and stages its grants
// policy for the next epoch; a stricter one is in force at once, and it
// returns how many grants that revoked.
func (h *Host) stageConfig(d string) (n int) {
	cfg, err := config.Load(h.opts.Dir)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.config.bad, h.config.badAt = err.Error(), d
		return 0
	}
	h.config.read, h.config.bad, h.config.badAt = d, "", ""
	eff, strengthened := h.reconcileLocked(cfg)
	// The approval settings of the credential scopes are re-read with
	// [grants]; their sources were read once, at start (Options.Credentials).
	next := grant.NewPolicy(eff)
	h.config.next, h.config.nextChanges = nil, nil
	if changes := h.policy.GrantsChanges(next, h.enrolled); len(changes) > 0 {
		if strengthened {
			// A stricter policy needs no new epoch to be safe: it applies at once.
			h.policy = next
			h.logf("grants policy re-read from %s in force at once (it raised the policy floor): %s", config.FileName, strings.Join(changes, "; "))
			h.audit.event(audit.TypePolicyRaised, h.epochLocked(), h.run, map[string]any{"policy_changed": changes, "file": config.FileName})
			revoked := h.revokeOutrankedLocked()
			h.renewRaisedLocked(revoked)
			n = len(revoked)
			if n := h.noAuthenticatorLocked(); n != "" {
				h.logf("%s", n)
			}
		} else {
			h.config.next, h.config.nextChanges = next, changes
		}
	}
	rest := withoutApproval(cfg)
	if at := h.config.atStart; at != nil {
		h.config.rest = !reflect.DeepEqual(at, rest)
	} else {
		h.config.rest = true
	}
	return n
}

// withoutApproval returns cfg without what a running host re-reads: the
// [grants] settings and the credential scopes' approval settings (tools,
// per_call, proof), and without its path.
func withoutApproval(cfg *config.Config) *config.Config {
	c := *cfg
	c.Grants, c.Path = config.Grants{}, ""
	c.Credentials = maps.Clone(cfg.Credentials)
	for name, cr := range c.Credentials {
		cr.Tools, cr.PerCall, cr.Proof = nil, false, nil
		c.Credentials[name] = cr
	}
	return &c
}

// applyPolicyLocked puts a re-read grants policy in force as epoch ep
// begins, and returns how it changed (nil when none was waiting).
func (h *Host) applyPolicyLocked(ep epoch.Epoch) []string {
	if h.config.next == nil {
		return nil
	}
	changes := h.config.nextChanges
	h.policy, h.config.next, h.config.nextChanges = h.config.next, nil, nil
	h.logf("epoch %s: grants policy re-read from %s in force: %s", ep, config.FileName, strings.Join(changes, "; "))
	return changes
}

// configChange says, in one line, what of a changed mcpepoch.toml is not
// in force, or returns "": a file not read yet (the next build signal
// reads it), one that does not load, a grants policy waiting for the next
// epoch, settings outside [grants] that reach only a new connection.
// Shown by mcpepoch status and logged on each build signal while it holds.
func (h *Host) configChange() string {
	if h.opts.Dir == "" {
		return ""
	}
	d := configDigest(h.opts.Dir)
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	switch {
	case d == h.config.read:
	case d == h.config.badAt:
		out = append(out, config.FileName+" does not load ("+h.config.bad+"): the grants policy in force stays")
	default:
		out = append(out, config.FileName+" changed: its [grants] settings are re-read on the next build signal")
	}
	if h.config.next != nil {
		out = append(out, "grants policy re-read from "+config.FileName+" ("+strings.Join(h.config.nextChanges, "; ")+
			"): in force from the next epoch (a build that changes the server, or "+selfcmd.Name()+" restart)")
	}
	if h.config.rest {
		out = append(out, config.FileName+" changed settings outside [grants] since this host started; they are not re-read while the client stays connected: "+
			"reconnect the client (restart its MCP server) to apply them")
	}
	return strings.Join(out, "; ")
}
