package trust

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/gowebpki/jcs"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
)

// SSHNamespace is the SSHSIG namespace of a signature over a Change's
// Challenge (ssh-keygen -Y sign -n mcpepoch-trust@v1), distinct from the
// grant namespace so that neither signature can stand for the other.
const SSHNamespace = "mcpepoch-trust@v1"

// Operations of a Change.
const (
	OpAdd    = "add"
	OpRemove = "remove"
)

// Errors of Apply and RecordUse.
var (
	// ErrStale: the store changed between Propose and Apply; propose again.
	ErrStale = errors.New("trust store changed since the change was proposed")
	// ErrPresenceRequired: the change needs a presence signature by an
	// enrolled authenticator and none, or the wrong one, was given.
	ErrPresenceRequired = errors.New("a presence signature by an enrolled authenticator is required")
	// ErrCounter: a signature counter did not grow (WebAuthn §6.1.1: a
	// cloned authenticator or a replayed signature).
	ErrCounter = errors.New("signature counter did not increase")
)

// Change is an addition or removal proposed to the store; Propose makes it
// and Apply carries it out.
type Change struct {
	Op            string        `json:"op"` // OpAdd or OpRemove
	Authenticator Authenticator `json:"authenticator"`
	// StoreDigest is the store's Digest the change was proposed against.
	StoreDigest string `json:"storeDigest"`
	Nonce       string `json:"nonce"`
	// Requirement says what Apply needs; not part of the signed change.
	Requirement Requirement `json:"-"`
}

// Requirement is what a change needs before Apply will make it.
type Requirement struct {
	// Presence is true when some authenticator is enrolled: one of Signers
	// must sign Challenge with user presence (a WebAuthn assertion with
	// Challenge as its challenge, or an SSHSIG in SSHNamespace over it).
	// It is false only for the first authenticator, which is trusted on
	// first use; callers must say so loudly.
	Presence bool
	Signers  []Authenticator
	// Challenge is the SHA-256 of the RFC 8785 JSON of
	// {"v":1,"op","authenticator","storeDigest","nonce"}; the
	// authenticator's signCount is 0 in it.
	Challenge grant.Digest
}

// Presence is a verified presence signature, as the WebAuthn ceremony or
// the SSHSIG verifier report it. Only code that checked the signature
// against the enrolled public key may fill one in.
type Presence struct {
	AuthenticatorID string
	Challenge       grant.Digest // what was signed
	SignCount       uint32       // the counter in the signature
	UserVerified    bool         // UV flag: a PIN or biometric, not only a touch
	// Assertion is the WebAuthn assertion itself; Apply keeps it with an
	// added authenticator as its Confirmation, and refuses an addition
	// without it.
	Assertion *Assertion
	// SSHSIG is the armored signature, for an ssh key; kept the same way.
	SSHSIG []byte
}

// Propose returns the change of adding a (op OpAdd; a from NewWebAuthn or
// NewSSH) or removing the authenticator with a.ID (op OpRemove), with what
// Apply will need. It fails when a is malformed, already enrolled (add),
// or not enrolled (remove).
func (s *Store) Propose(op string, a Authenticator) (*Change, error) {
	switch op {
	case OpAdd:
		if err := a.check(); err != nil {
			return nil, fmt.Errorf("authenticator: %v", err)
		}
		if _, ok := s.Lookup(a.ID); ok {
			return nil, fmt.Errorf("authenticator %s is already enrolled", a.ID)
		}
		a = bare(a)
		if len(s.Authenticators) > 0 {
			a.Enrolled = "" // only the root says how it was enrolled
		}
	case OpRemove:
		got, ok := s.Lookup(a.ID)
		if !ok {
			return nil, fmt.Errorf("authenticator %s is not enrolled", a.ID)
		}
		a = *got
		a.SignCount = 0
	default:
		return nil, fmt.Errorf("change op %q: want %q or %q", op, OpAdd, OpRemove)
	}
	c := &Change{Op: op, Authenticator: a, StoreDigest: s.Digest(), Nonce: grant.NewNonce()}
	ch, err := c.challenge()
	if err != nil {
		return nil, err
	}
	c.Requirement = Requirement{Presence: len(s.Authenticators) > 0, Signers: slices.Clone(s.Authenticators), Challenge: ch}
	return c, nil
}

func (c *Change) challenge() (grant.Digest, error) {
	b, err := json.Marshal(struct {
		V int `json:"v"`
		*Change
	}{1, c})
	if err == nil {
		b, err = jcs.Transform(b)
	}
	if err != nil {
		return grant.Digest{}, fmt.Errorf("change: %w", err)
	}
	return sha256.Sum256(b), nil
}

// Apply makes change c, proposed by Propose on a store read from the same
// directory, and writes the store. p is the presence signature c's
// Requirement asks for (nil only for the first authenticator). Under the
// store's lock it re-reads the store and refuses with ErrStale when the
// store's Digest is no longer c.StoreDigest, with ErrPresenceRequired when p
// is missing, over another challenge or by an authenticator not enrolled,
// or, for an addition, carries no Assertion that verifies (it is kept with
// the new entry as its Confirmation); with an error when a removal would
// leave an entry whose confirmation no longer verifies;
// and with ErrCounter when p's counter did not grow. On success s holds the
// store as written.
func (s *Store) Apply(c *Change, p *Presence) error {
	return s.update(func(cur *Store) error {
		if cur.Digest() != c.StoreDigest {
			return ErrStale
		}
		ch, err := c.challenge()
		if err != nil {
			return err
		}
		if len(cur.Authenticators) > 0 {
			if p == nil || p.Challenge != ch {
				return ErrPresenceRequired
			}
			if err := cur.recordUse(p.AuthenticatorID, p.SignCount); err != nil {
				return err
			}
		}
		switch c.Op {
		case OpAdd:
			a := c.Authenticator
			if len(cur.Authenticators) > 0 {
				a.AddedBy = p.AuthenticatorID
				a.Confirmation = &Confirmation{By: p.AuthenticatorID, StoreDigest: c.StoreDigest, Nonce: c.Nonce, WebAuthn: p.Assertion, SSHSIG: string(p.SSHSIG)}
				if err := verifyEntry(a, cur.Authenticators); err != nil {
					return fmt.Errorf("%w: %v", ErrPresenceRequired, err)
				}
			}
			cur.Authenticators = append(cur.Authenticators, a)
		case OpRemove:
			for _, x := range cur.Authenticators {
				if x.AddedBy == c.Authenticator.ID {
					return fmt.Errorf("authenticator %s confirmed %s: remove that one first", c.Authenticator.ID, x.ID)
				}
			}
			cur.Authenticators = slices.DeleteFunc(cur.Authenticators, func(x Authenticator) bool { return x.ID == c.Authenticator.ID })
		}
		return nil
	})
}

// RecordUse records that the enrolled authenticator id produced a valid
// signature with counter count, and writes the store. It refuses with
// ErrPresenceRequired when id is not enrolled, and with ErrCounter unless
// count is greater than the stored counter (both 0 is accepted: an
// authenticator without a counter, WebAuthn §6.1.1). Call it after a
// signature verified and before acting on it, so that two hosts cannot
// both accept one signature.
func (s *Store) RecordUse(id string, count uint32) error {
	return s.update(func(cur *Store) error { return cur.recordUse(id, count) })
}

func (s *Store) recordUse(id string, count uint32) error {
	a, ok := s.Lookup(id)
	if !ok {
		return fmt.Errorf("%w: %s is not enrolled", ErrPresenceRequired, id)
	}
	if count <= a.SignCount && (count != 0 || a.SignCount != 0) {
		return fmt.Errorf("%w: %s signed with %d, last seen %d", ErrCounter, id, count, a.SignCount)
	}
	a.SignCount = count
	return nil
}

// update re-reads the store under its lock, lets fn change it, writes it
// atomically (0600, directory created 0700) and leaves the result in s.
func (s *Store) update(fn func(cur *Store) error) error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("trust store: %w", err)
	}
	unlock, err := lock(filepath.Join(s.dir, ".lock"))
	if err != nil {
		return fmt.Errorf("trust store: lock: %w", err)
	}
	defer unlock()
	cur, err := Open(s.dir)
	if err != nil {
		return err
	}
	if err := fn(cur); err != nil {
		return err
	}
	b, err := cur.encode()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(cur.Path(), b, 0o600); err != nil {
		return err
	}
	s.Authenticators = cur.Authenticators
	return nil
}
