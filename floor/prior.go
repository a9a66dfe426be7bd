// Package floor holds the rules of the project's policy floor that do not
// need a running host: the strictest floor that stands in for one that
// cannot be read or went missing, what the project's audit log says of
// earlier hosts' floors and trust stores (Prior), and the notes every
// command says the same way (MissingNote, NoAuthenticatorNote,
// WeakNote). The floor file itself, its fields and its acceptance are
// package trust's; a host applies the floor (package host).
package floor

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/internal/userdirs"
	"github.com/mcpepoch/mcpepoch/trust"
)

// A floor that went missing.
//
// The policy floor and the trust store live under the user's config
// directory (trust.DefaultDir: under the home directory the account
// database names, whatever the environment says), which can still go or
// move: a directory removed, a home changed in the account database, or
// an older mcpepoch that followed $XDG_CONFIG_HOME and $HOME. A host that
// finds an empty config directory finds no floor and no root. Every host start records which
// floor and trust store it uses (trust_pinned: path and digest of both).
// When a host finds no floor while the project's audit log shows that an
// earlier host ran with one (a trust_pinned or policy_* record), it is not
// a first use (and when an earlier host also pinned a root, the empty
// store is named too): the floor in force is the strictest (as for a damaged floor), the
// default proof is presence, and the host says so on stderr, in status and
// in a policy_floor_missing record, until a person restores the directory
// or accepts the policy (mcpepoch policy accept).

// priorPin is what the project's audit log says of earlier hosts: the
// last trust_pinned record's floor and store paths, the last root pinned
// and the digest of the store that held it, and whether any earlier host
// ran with a floor or pinned a root.
type priorPin struct {
	floor, store string // as the last trust_pinned record names them ("" unknown)
	root         string // the id of the last root pinned ("" unknown)
	rootStore    string // the path and digest of the store that held it
	rootDigest   string
	roots        []string // every root id pinned, each once, in order
	hadFloor     bool
	hadRoot      bool
}

// readPriorPin reads the project's audit log for earlier hosts' pins. A
// log that exists but cannot be read counts as one that had both: the
// host takes the stricter view.
func readPriorPin(dir string) priorPin {
	p, _ := readPrior(dir, false)
	return p
}

// readPrior is readPriorPin and, when floor is true, lastHeldFloor, in
// one pass over the log.
func readPrior(dir string, floor bool) (priorPin, *trust.Floor) {
	var (
		p    priorPin
		held heldFloor
		opts = audit.ScanOptions{Fields: func(typ string) bool { return typ == audit.TypeTrustPinned }}
	)
	if floor {
		opts.Line = held.line
	}
	err := audit.Scan(layout.Audit(dir), opts, p.note)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return priorPin{}, held.last
	case err != nil:
		return priorPin{hadFloor: true, hadRoot: true}, held.last
	}
	return p, held.last
}

// note takes the record r of the log into account.
func (p *priorPin) note(r audit.Record) {
	switch r.Type {
	case audit.TypePolicyNotApplied, audit.TypePolicyRaised, audit.TypePolicyAccepted:
		p.hadFloor = true
	case audit.TypeTrustPinned:
		p.hadFloor = true // every host since the floor exists pinned one
		p.floor, _ = r.Fields["floor_path"].(string)
		p.store, _ = r.Fields["path"].(string)
		if root, ok := r.Fields["root"].(map[string]any); ok {
			p.hadRoot = true
			p.root, _ = root["id"].(string)
			if !slices.Contains(p.roots, p.root) {
				p.roots = append(p.roots, p.root)
			}
			p.rootStore = p.store
			p.rootDigest, _ = r.Fields["store_digest"].(string)
		}
	}
}

// LastHeld returns the last floor the project's audit log in dir
// says a host held: the "floor" of its last trust_pinned or
// policy_floor_held record, or nil when none names one. Only those lines
// are decoded, so that a long log costs a host start a byte scan. Lines
// are taken as they are, records or not (a line longer than any record
// is passed over).
func LastHeld(dir string) *trust.Floor {
	f, err := safefile.OpenNoFollow(layout.Audit(dir))
	if err != nil {
		return nil
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, audit.MaxRecordSize+1)
	var held heldFloor
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // longer than any record: skipped to its end
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			line = nil
		}
		held.line(line)
		if err != nil {
			return held.last
		}
	}
}

// heldFloor is what lastHeldFloor finds, line by line.
type heldFloor struct {
	last *trust.Floor
}

// typeMember starts the members heldFloor looks for: "type":"trust_pinned"
// and "type":"policy_floor_held".
var typeMember = []byte(`"type":"`)

// namesFloor reports whether line holds "type":"trust_pinned" or
// "type":"policy_floor_held", in one scan.
func namesFloor(line []byte) bool {
	for {
		i := bytes.Index(line, typeMember)
		if i < 0 {
			return false
		}
		rest := line[i+len(typeMember):]
		for _, t := range [...]string{audit.TypeTrustPinned, audit.TypePolicyFloorHeld} {
			if len(rest) > len(t) && string(rest[:len(t)]) == t && rest[len(t)] == '"' {
				return true
			}
		}
		line = line[i+len(typeMember)-1:] // its last quote may start the next
	}
}

// line takes one line of the log into account (with or without its
// newline; nil for a line passed over).
func (h *heldFloor) line(line []byte) {
	if line = bytes.TrimSuffix(line, []byte("\n")); len(line) > audit.MaxRecordSize {
		return // as lastHeldFloor's reader passes it over
	}
	if !namesFloor(line) {
		return
	}
	var rec struct {
		Type  string       `json:"type"`
		Floor *trust.Floor `json:"floor"`
	}
	if json.Unmarshal(line, &rec) == nil && rec.Floor != nil &&
		(rec.Type == audit.TypeTrustPinned || rec.Type == audit.TypePolicyFloorHeld) {
		h.last = rec.Floor
	}
}

// MissingNote says, for the project at dir whose floor a host would read
// from the trust store directory storeDir, what an earlier host ran with
// that is gone now, or "" when nothing is: the floor (floorFound false
// while the project's audit log shows an earlier host had one), or the
// trust root (enrolled false while the log shows an earlier host pinned
// one). It reads the audit log as a host does at start, so that mcpepoch
// policy and doctor say what a host would. When it is not "", a host
// counts only presence: the strictest floor when the floor went missing
// (StrictestFloor), presence as the default proof when only the root did.
func MissingNote(dir, storeDir string, floorFound, enrolled bool) string {
	_, note := priorGone(dir, storeDir, floorFound, enrolled)
	return note
}

// Prior is what the project's audit log says of earlier hosts, read in
// one pass (ReadPrior), for mcpepoch policy: whether a floor or a root
// went missing (MissingNote), every root pinned and the last floor held.
type Prior struct {
	pin  priorPin
	held *trust.Floor
}

// ReadPrior reads the audit log of the project at dir once, for what a
// host that starts reads from it.
func ReadPrior(dir string) *Prior {
	p, held := readPrior(dir, true)
	return &Prior{pin: p, held: held}
}

// MissingNote is MissingNote of the log p was read from.
func (p *Prior) MissingNote(storeDir string, floorFound, enrolled bool) string {
	if floorFound && enrolled {
		return ""
	}
	return p.pin.missingNote(!floorFound, !enrolled, storeDir)
}

// PinnedRoots returns the id of every trust root that hosts of the
// project pinned, as its audit log shows (trust_pinned), each once, in
// order; nil when none did. mcpepoch policy accept, where the floor is
// missing, counts an unattested key only when it is the one root ever
// pinned, or none was: a store replaced by another root (an agent's own
// key) shows as a second root.
func (p *Prior) PinnedRoots() []string { return p.pin.roots }

// LastHeldFloor returns the last floor the project's audit log says a
// host held (lastHeldFloor), or nil: what a host that starts checks a
// floor file against, so that mcpepoch policy accept, where the floor is
// missing, names it as the floor its acceptance replaces.
func (p *Prior) LastHeldFloor() *trust.Floor { return p.held }

// priorGone is MissingNote with what the audit log says.
func priorGone(dir, storeDir string, floorFound, enrolled bool) (priorPin, string) {
	if floorFound && enrolled {
		return priorPin{}, ""
	}
	p := readPriorPin(dir)
	return p, p.missingNote(!floorFound, !enrolled, storeDir)
}

// missingNote says what went missing against p, or "" when nothing did;
// noFloor: this host found no floor file, noRoot: its store (storeDir)
// has no authenticator.
func (p priorPin) missingNote(noFloor, noRoot bool, storeDir string) string {
	switch {
	case noFloor && p.hadFloor:
		what := "no policy floor"
		if noRoot && p.hadRoot {
			what = "no policy floor and no trusted authenticator"
		}
		where := fmt.Sprintf(" (this host reads %s)", storeDir)
		if p.store != "" && p.store != storeDir && filepath.Dir(p.store) != storeDir {
			where = fmt.Sprintf(" (an earlier host used the trust store %s; this host reads %s, under the home directory the account database names: "+
				"an older mcpepoch followed $XDG_CONFIG_HOME or $HOME, which this one does not, or that home changed; if %s is yours, move its files to %s)",
				p.store, storeDir, filepath.Dir(p.store), storeDir)
			if userdirs.FollowsEnv() {
				where = fmt.Sprintf(" (an earlier host used the trust store %s; this host reads %s: this test build follows $XDG_CONFIG_HOME and $HOME, and they differ)", p.store, storeDir)
			}
		}
		return fmt.Sprintf("%s found, but this project's audit log shows an earlier host ran with one%s: the config directory differs or was emptied; "+
			"until a person restores it or accepts %s's policy with "+selfcmd.Name()+" policy accept --ssh KEY (presence), the strictest policy is in force (presence only), "+
			"and no answer at a terminal or in the MCP client can change that: start the host with the config directory the earlier host used%s",
			what, where, config.FileName, enrollFirst(noRoot))
	case noRoot && p.hadRoot:
		return fmt.Sprintf("trust store missing: %s holds no authenticator, but this project's audit log shows an earlier host pinned the root %s (store %s, %s): "+
			"the store was deleted or the config directory differs; only presence counts, which nobody can give until a person restores %s, "+
			"or enrolls again at their own terminal as a first enrollment ("+selfcmd.Name()+" enroll --ssh KEY.pub or --web) and the host starts again",
			filepath.Join(storeDir, trust.FileName), known(p.root), known(p.rootStore), known(p.rootDigest), known(p.rootStore))
	}
	return ""
}

// known is s, or "(not recorded)" when the audit log did not say.
func known(s string) string {
	if s == "" {
		return "(not recorded)"
	}
	return s
}

// enrollFirst is what a person does first when nothing is enrolled.
func enrollFirst(noRoot bool) string {
	if !noRoot {
		return ""
	}
	return "; with no authenticator enrolled, a person first enrolls one at their own terminal (" + selfcmd.Name() + " enroll --ssh KEY.pub, a first enrollment)"
}

// FileDigest returns "sha256:HEX" of the file at path, or "" when it
// cannot be read.
func FileDigest(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// StoreGoneNote says that the trust root an earlier host pinned is gone
// from the store at storeDir while the floor was found, or "" when none
// went missing (what a host logs at start and records as
// trust_store_missing).
func (p *Prior) StoreGoneNote(storeDir string) string {
	return p.pin.missingNote(false, true, storeDir)
}

// LastRoot is the last root an earlier host pinned: its id, and the path
// and digest of the store that held it ("" unknown).
func (p *Prior) LastRoot() (root, store, digest string) {
	return p.pin.root, p.pin.rootStore, p.pin.rootDigest
}
