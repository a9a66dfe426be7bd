// Package build computes the content identity of an MCP server's code: digests
// of the entry file, the lockfiles, the runtime binary and (where present) the
// resolved dependency tree, the way Go's cmd/go names build actions by content
// rather than by path or name.
//
// Both sides of mcpepoch use this package: the build hook (mcpepoch record)
// to describe what a build produced, and the host (mcpepoch host) to
// recompute, at every launch, what is about to run. The host never takes an
// identity from the hook or from the server (seed: "the launch and the epoch
// must be observed by the process manager, host or credential gateway").
package build

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// Digest is a content digest in the form "sha256:<64 lowercase hex>".
// Clients must compare digests as opaque strings and must not assume the
// algorithm stays SHA-256. The zero value means "no digest".
type Digest string

// Algorithm is the prefix every Digest produced by this package carries.
const Algorithm = "sha256"

// NewDigest returns the Digest of the bytes accumulated in h, which must be a
// SHA-256 hash.
func NewDigest(h hash.Hash) Digest {
	return Digest(Algorithm + ":" + hex.EncodeToString(h.Sum(nil)))
}

// DigestBytes returns the Digest of b.
func DigestBytes(b []byte) Digest {
	sum := sha256.Sum256(b)
	return Digest(Algorithm + ":" + hex.EncodeToString(sum[:]))
}

// KeyedAlgorithm is the prefix of the keyed digests of environment values
// (HMAC-SHA-256 under the project's digest key; see Spec.EnvKeyFile).
const KeyedAlgorithm = "hmac-sha256"

// ParseDigest checks that s has the form "sha256:<64 lowercase hex>" (or
// "hmac-sha256:<64 lowercase hex>", a keyed digest) and returns it as a
// Digest. The error names what is wrong.
func ParseDigest(s string) (Digest, error) {
	hexPart, ok := strings.CutPrefix(s, Algorithm+":")
	if !ok {
		hexPart, ok = strings.CutPrefix(s, KeyedAlgorithm+":")
	}
	if !ok {
		return "", fmt.Errorf("digest %q: want prefix %q", s, Algorithm+":")
	}
	if len(hexPart) != 2*sha256.Size {
		return "", fmt.Errorf("digest %q: want %d hex digits, have %d", s, 2*sha256.Size, len(hexPart))
	}
	if _, err := hex.DecodeString(hexPart); err != nil || strings.ToLower(hexPart) != hexPart {
		return "", fmt.Errorf("digest %q: not lowercase hex", s)
	}
	return Digest(s), nil
}

// String returns d unchanged; it exists so Digest satisfies fmt.Stringer.
func (d Digest) String() string { return string(d) }

// Short returns the first 12 hex digits of d (for status lines), or "-" for
// the zero Digest.
func (d Digest) Short() string {
	_, h, ok := strings.Cut(string(d), ":")
	if !ok || len(h) < 12 {
		return "-"
	}
	return h[:12]
}

// FileDigest reads the regular file at path and returns its Digest and size
// in bytes. Symlinks are followed. It returns the *os.PathError of the failed
// open or read, so callers can name the file in their message; a path that
// is not a regular file (a FIFO, a device) is refused without blocking
// (internal/safefile).
func FileDigest(path string) (Digest, int64, error) {
	f, err := safefile.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, &os.PathError{Op: "read", Path: path, Err: err}
	}
	return NewDigest(h), n, nil
}
