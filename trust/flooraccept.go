package trust

import (
	"crypto/sha256"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/mcpepoch/mcpepoch/grant"
)

// PolicyNamespace is the SSHSIG namespace of a signature that accepts a
// weakening of a policy floor (ssh-keygen -Y sign -n mcpepoch-policy@v1):
// not a grant's, nor a trust-store change's, so that no signature made for
// one counts for another.
const PolicyNamespace = "mcpepoch-policy@v1"

// acceptance is what a person signs to accept a weakening: the floor in
// force and the one that replaces it (their policies, without times and
// who updated them), for one project root, with a fresh nonce.
type acceptance struct {
	V     int    `json:"v"`
	Root  string `json:"root"`
	From  Floor  `json:"from"`
	To    Floor  `json:"to"`
	Nonce string `json:"nonce"`
}

// AcceptDigest returns the digest a person signs (with presence) to
// replace the floor from by to: the SHA-256 of the JSON of
// {"v": 1, "root", "from", "to", "nonce"}, each floor without its
// updatedAt and updatedBy. Its short code (grant.Digest.ShortCode) is
// what the screen shows beside the weakenings.
func AcceptDigest(from, to Floor, nonce string) grant.Digest {
	strip := func(f Floor) Floor {
		f.V, f.UpdatedAt, f.UpdatedBy = floorVersion, time.Time{}, ""
		return f
	}
	from, to = strip(from), strip(to)
	b, _ := json.Marshal(acceptance{V: 1, Root: from.Root, From: from, To: to, Nonce: nonce})
	return sha256.Sum256(b)
}

// FloorRoot is the project root a floor is kept for: dir made absolute,
// with symbolic links resolved where they can be.
func FloorRoot(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}
