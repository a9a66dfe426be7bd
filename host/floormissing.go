package host

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

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
	"github.com/mcpepoch/mcpepoch/trust"
)

// A floor that went missing.
//
// The policy floor and the trust store live under the user's config
// directory ($XDG_CONFIG_HOME, trust.DefaultDir), which a client's launch
// settings can point elsewhere: a host started with an empty config
// directory finds no floor and no root. Every host start records which
// floor and trust store it uses (trust_pinned: path and digest of both).
// When a host finds no floor while the project's audit log shows that an
// earlier host ran with one (a trust_pinned or policy_* record), it is not
// a first use (and when an earlier host also pinned a root, the empty
// store is named too): the floor in force is the strictest (as for a damaged floor), the
// default proof is presence, and the host says so on stderr, in status and
// in a policy_floor_missing record, until a person restores the directory
// or accepts the policy (mcpepoch policy accept).

// priorPin is what the project's audit log says of earlier hosts: the
// last trust_pinned record's floor and store paths, and whether any
// earlier host ran with a floor or pinned a root.
type priorPin struct {
	floor, store string // as the last trust_pinned record names them ("" unknown)
	hadFloor     bool
	hadRoot      bool
}

// readPriorPin reads the project's audit log for earlier hosts' pins. A
// log that exists but cannot be read counts as one that had both: the
// host takes the stricter view.
func readPriorPin(dir string) priorPin {
	recs, err := audit.Read(layout.Audit(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return priorPin{}
	}
	if err != nil && len(recs) == 0 {
		return priorPin{hadFloor: true, hadRoot: true}
	}
	var p priorPin
	for _, r := range recs {
		switch r.Type {
		case audit.TypePolicyNotApplied, audit.TypePolicyRaised, audit.TypePolicyAccepted:
			p.hadFloor = true
		case audit.TypeTrustPinned:
			p.hadFloor = true // every host since the floor exists pinned one
			p.floor, _ = r.Fields["floor_path"].(string)
			p.store, _ = r.Fields["path"].(string)
			if _, ok := r.Fields["root"]; ok {
				p.hadRoot = true
			}
		}
	}
	return p
}

// lastHeldFloor returns the last floor the project's audit log in dir
// says a host held: the "floor" of its last trust_pinned or
// policy_floor_held record, or nil when none names one. Only those lines
// are decoded, so that a long log costs a host start a byte scan.
func lastHeldFloor(dir string) *trust.Floor {
	f, err := safefile.OpenNoFollow(layout.Audit(dir))
	if err != nil {
		return nil
	}
	defer f.Close()
	pinned := []byte(`"type":"` + audit.TypeTrustPinned + `"`)
	held := []byte(`"type":"` + audit.TypePolicyFloorHeld + `"`)
	r := bufio.NewReaderSize(f, audit.MaxRecordSize+1)
	var last *trust.Floor
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // longer than any record: skipped to its end
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			line = nil
		}
		if bytes.Contains(line, pinned) || bytes.Contains(line, held) {
			var rec struct {
				Type  string       `json:"type"`
				Floor *trust.Floor `json:"floor"`
			}
			if json.Unmarshal(line, &rec) == nil && rec.Floor != nil &&
				(rec.Type == audit.TypeTrustPinned || rec.Type == audit.TypePolicyFloorHeld) {
				last = rec.Floor
			}
		}
		if err != nil {
			return last
		}
	}
}

// missingNote says what went missing against p, or "" when nothing did;
// noFloor: this host found no floor file, noRoot: its store has no
// authenticator.
func (p priorPin) missingNote(noFloor, noRoot bool) string {
	var what string
	switch {
	case noFloor && p.hadFloor && noRoot && p.hadRoot:
		what = "no policy floor and no trusted authenticator"
	case noFloor && p.hadFloor:
		what = "no policy floor"
	default:
		return ""
	}
	where := ""
	if p.store != "" {
		where = fmt.Sprintf(" (an earlier host used the trust store %s)", p.store)
	}
	return fmt.Sprintf("%s found, but this project's audit log shows an earlier host ran with one%s: the config directory ($XDG_CONFIG_HOME) differs or was emptied; until a person restores it or runs mcpepoch policy accept, the strictest policy is in force (presence only)", what, where)
}

// fileDigest returns "sha256:HEX" of the file at path, or "" when it
// cannot be read.
func fileDigest(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// floorPin returns the path and digest of the floor file in force ("" and
// "" without a project or store directory).
func (h *Host) floorPin() (path, digest string) {
	if h.opts.Dir == "" || h.pres.dir == "" {
		return "", ""
	}
	path = trust.FloorPath(h.pres.dir, trust.FloorRoot(h.opts.Dir))
	return path, fileDigest(path)
}
