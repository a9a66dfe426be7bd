package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gowebpki/jcs"

	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// KeySize is the size of a digest key in bytes.
const KeySize = 32

// KeyedPrefix starts every keyed digest: "hmac-sha256:" and 64 hex digits.
const KeyedPrefix = "hmac-sha256:"

// Key is a project's digest key: the secret that makes the digests of tool
// arguments and environment values in the audit log and the run manifest
// impossible to test guesses against without it. An unkeyed SHA-256 of a
// 4-digit PIN is found by trying 10,000 values; an HMAC-SHA-256 (RFC 2104)
// under a 256-bit key is not. The zero Key is not usable.
//
// The key is kept in the project's state directory (.mcpepoch/digest.key,
// mode 0600) and created on first use by LoadKey. Digests are comparable
// within a project, not across projects; deleting the key makes every later
// digest differ from every earlier one (records stay verifiable: the chain
// does not use the key).
type Key struct {
	k []byte
	m *keyedMAC // one HMAC state, reused; nil in a Key made otherwise
}

// keyedMAC is an HMAC-SHA-256 state under a Key, reset for each digest
// instead of made anew (hmac.New hashes the key's pads every time).
type keyedMAC struct {
	mu    sync.Mutex
	mac   hash.Hash
	sum   [sha256.Size]byte // the last sum, under mu: no allocation per digest
	canon fastCanon         // the arguments' canonical form, under mu (ArgsDigest)
}

// LoadKey reads the key file at path, creating it if it does not exist:
// 32 random bytes from crypto/rand, written as 64 lowercase hex digits and
// a newline to a temporary file (mode 0600, fsynced) that is then linked to
// path, so a concurrent creator loses the race cleanly and both use one key.
// A missing directory is created, mode 0700. A file that is not a regular file, that others
// than its owner may read or write, or that does not hold a key is an error
// naming the file.
func LoadKey(path string) (Key, error) {
	k, err := readKey(path)
	if !errors.Is(err, os.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Key{}, fmt.Errorf("audit: create digest key %s: %w", path, err)
	}
	if err := createKey(path); err != nil && !errors.Is(err, os.ErrExist) {
		return Key{}, fmt.Errorf("audit: create digest key %s: %w", path, err)
	}
	return readKey(path)
}

func readKey(path string) (Key, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Key{}, err
	}
	switch {
	case !fi.Mode().IsRegular():
		return Key{}, fmt.Errorf("audit: digest key %s: not a regular file (%v)", path, fi.Mode().Type())
	case fi.Mode().Perm()&0o077 != 0:
		return Key{}, fmt.Errorf("audit: digest key %s: mode %v lets others read it; want 0600 (chmod 600 %s)", path, fi.Mode().Perm(), path)
	}
	b, err := safefile.ReadFileNoFollow(path, 4*KeySize)
	if safefile.Refusal(err) != nil {
		return Key{}, fmt.Errorf("audit: digest key %s: %v", path, safefile.Refusal(err))
	}
	if err != nil {
		return Key{}, fmt.Errorf("audit: digest key: %w", err)
	}
	k, err := hex.DecodeString(strings.TrimSuffix(string(b), "\n"))
	if err != nil || len(k) != KeySize {
		return Key{}, fmt.Errorf("audit: digest key %s: want %d hex digits and a newline", path, 2*KeySize)
	}
	return Key{k: k, m: &keyedMAC{mac: hmac.New(sha256.New, k)}}, nil
}

func createKey(path string) error {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write([]byte(hex.EncodeToString(k) + "\n"))
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// Digest returns KeyedPrefix + hex HMAC-SHA-256 of b under k.
func (k Key) Digest(b []byte) string {
	if len(k.k) == 0 {
		panic("audit: digest with the zero Key")
	}
	if k.m != nil {
		k.m.mu.Lock()
		defer k.m.mu.Unlock()
		return k.m.digest(b)
	}
	var out [len(KeyedPrefix) + 2*sha256.Size]byte
	copy(out[:], KeyedPrefix)
	m := hmac.New(sha256.New, k.k)
	m.Write(b)
	hex.Encode(out[len(KeyedPrefix):], m.Sum(nil))
	return string(out[:])
}

// digest is Key.Digest with the reused state; m.mu is held.
func (m *keyedMAC) digest(b []byte) string {
	var out [len(KeyedPrefix) + 2*sha256.Size]byte
	copy(out[:], KeyedPrefix)
	m.mac.Reset()
	m.mac.Write(b)
	hex.Encode(out[len(KeyedPrefix):], m.mac.Sum(m.sum[:0]))
	return string(out[:])
}

// ArgsDigest returns the keyed digest (Digest) of the JCS canonical form
// (RFC 8785) of a tool call's arguments, so that equal arguments give equal
// digests whatever their member order or spacing. Empty raw (a call
// without arguments) is digested as {}. If raw is not valid JSON, the
// digest is over its bytes unchanged. It is the args_digest member of
// tool_called records.
func (k Key) ArgsDigest(raw json.RawMessage) string {
	if len(k.k) == 0 || k.m == nil {
		return k.Digest(canonicalArgs(raw))
	}
	// The canonical form is written into buffers kept with the MAC.
	k.m.mu.Lock()
	defer k.m.mu.Unlock()
	return k.m.digest(k.m.canon.args(raw))
}

func canonicalArgs(raw json.RawMessage) []byte {
	var c fastCanon
	return c.args(raw)
}

// args returns the canonical form of raw for its digest (ArgsDigest),
// in c's buffers when the fast form applies.
func (c *fastCanon) args(raw json.RawMessage) []byte {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return []byte("{}")
	}
	if out, ok := c.canonical(b); ok {
		return out
	}
	if c, err := jcs.Transform(b); err == nil {
		return c
	}
	return b
}
