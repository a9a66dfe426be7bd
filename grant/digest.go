package grant

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gowebpki/jcs"

	"github.com/mcpepoch/mcpepoch/epoch"
)

// ProposalVersion is the version of the Proposal shape below. A change to
// the members or their meaning takes a new version, so a signature over
// one version can never be read as one over another.
const ProposalVersion = 1

// NonceSize is the number of random bytes in a Proposal's nonce.
const NonceSize = 16

// Proposal is a grant as shown to a person before it is approved: exactly
// what an authenticator signs. Its Digest is the WebAuthn challenge of an
// approval page and the message of an SSHSIG approval (namespace
// mcpepoch-grant@v1).
//
// Its JSON shape, version 1, before canonicalisation:
//
//	{
//	  "v": 1,
//	  "agentRun": "01JQ7R2…",            // the agent run the grant is for
//	  "executionEpoch": "01JQ7R9…",      // ULID of the epoch the grant is bound to
//	  "catalogRevision": "sha256:…",     // the catalog (tools/list) the person reviewed
//	  "toolScope": ["a", "b"],           // tool names, sorted, no duplicates, at least one
//	  "credentialScope": [],             // credential scope names, sorted, no duplicates
//	  "expiresWhen": "30m",              // "agent-run-ends", "per-call" or a Go duration
//	  "nonce": "0f1e…",                  // 16 random bytes, lowercase hex: no two proposals alike
//	  "auditHead": {"seq": 3, "hash": "sha256:…"} // the audit log's last record when asked
//	}
//
// Every member is always present (an empty credentialScope is [], never
// null or missing). Because auditHead is covered, a presence-signed
// approval is also a signed checkpoint of the audit log up to that record.
type Proposal struct {
	V               int         `json:"v"`
	AgentRun        string      `json:"agentRun"`
	ExecutionEpoch  epoch.Epoch `json:"executionEpoch"`
	CatalogRevision string      `json:"catalogRevision"`
	ToolScope       []string    `json:"toolScope"`
	CredentialScope []string    `json:"credentialScope"`
	ExpiresWhen     string      `json:"expiresWhen"`
	Nonce           string      `json:"nonce"`
	AuditHead       AuditHead   `json:"auditHead"`
}

// AuditHead names the last record of the audit log: its seq (0 for an empty
// log) and its hash ("sha256:" and 64 hex digits), as in the log's head
// file (audit.Head).
type AuditHead struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// NewNonce returns NonceSize random bytes in lowercase hex, for
// Proposal.Nonce.
func NewNonce() string {
	b := make([]byte, NonceSize)
	rand.Read(b) // never fails (crypto/rand documents it)
	return hex.EncodeToString(b)
}

// Digest is the SHA-256 of a Proposal's canonical JSON (RFC 8785).
type Digest [sha256.Size]byte

// String returns "sha256:" and the digest in lowercase hex.
func (d Digest) String() string { return "sha256:" + hex.EncodeToString(d[:]) }

// crockford is Crockford's base32 alphabet: no I, L, O or U, so a code
// read aloud or typed from a screen is not misread.
var crockford = base32.NewEncoding("0123456789ABCDEFGHJKMNPQRSTVWXYZ").WithPadding(base32.NoPadding)

// ShortCode returns the first 40 bits of d as 8 Crockford base32 characters
// in two groups, "7K3Q-M9X2". Every screen that asks for an approval shows
// it, and so does the authenticator's prompt where it can, so a person can
// see that both speak of the same grant. It is for eyes only; it is never
// what is verified.
func (d Digest) ShortCode() string {
	s := crockford.EncodeToString(d[:5])
	return s[:4] + "-" + s[4:]
}

// ParseDigest reads the String form of a Digest.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	h, ok := strings.CutPrefix(s, "sha256:")
	b, err := hex.DecodeString(h)
	if !ok || err != nil || len(b) != len(d) || strings.ToLower(h) != h {
		return d, fmt.Errorf("digest %q: want sha256: and 64 lowercase hex digits", s)
	}
	copy(d[:], b)
	return d, nil
}

// Canonical returns the RFC 8785 (JCS) form of p, the bytes its Digest is
// taken over. It fails, naming the member, when p is not a well-formed
// version 1 proposal: see Check.
func (p *Proposal) Canonical() ([]byte, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("proposal: %w", err)
	}
	return jcs.Transform(b)
}

// Digest returns the SHA-256 of p's canonical JSON.
func (p *Proposal) Digest() (Digest, error) {
	b, err := p.Canonical()
	if err != nil {
		return Digest{}, err
	}
	return sha256.Sum256(b), nil
}

// Check reports the first member that makes p not a well-formed version 1
// proposal: v not 1; agentRun empty; executionEpoch not a ULID;
// catalogRevision empty; toolScope empty, unsorted or with duplicates;
// credentialScope nil, unsorted or with duplicates; expiresWhen not an
// expiry (ParseExpiry); nonce not NonceSize bytes of lowercase hex;
// auditHead with a negative seq or a hash that is not a digest. Lists must
// arrive sorted rather than be sorted here, so that what was shown is in
// the order that was signed.
func (p *Proposal) Check() error {
	if p.V != ProposalVersion {
		return fmt.Errorf("proposal: member \"v\" is %d, want %d", p.V, ProposalVersion)
	}
	if p.AgentRun == "" {
		return errors.New(`proposal: member "agentRun" empty`)
	}
	if _, err := epoch.Parse(string(p.ExecutionEpoch)); err != nil {
		return fmt.Errorf(`proposal: member "executionEpoch": %v`, err)
	}
	if p.CatalogRevision == "" {
		return errors.New(`proposal: member "catalogRevision" empty`)
	}
	if len(p.ToolScope) == 0 {
		return errors.New(`proposal: member "toolScope" empty, want at least one tool`)
	}
	if err := sortedSet("toolScope", p.ToolScope); err != nil {
		return err
	}
	if p.CredentialScope == nil {
		return errors.New(`proposal: member "credentialScope" null, want a list (may be empty)`)
	}
	if err := sortedSet("credentialScope", p.CredentialScope); err != nil {
		return err
	}
	if err := ParseExpiry(p.ExpiresWhen); err != nil {
		return fmt.Errorf(`proposal: member "expiresWhen": %v`, err)
	}
	if n, err := hex.DecodeString(p.Nonce); err != nil || len(n) != NonceSize || strings.ToLower(p.Nonce) != p.Nonce {
		return fmt.Errorf(`proposal: member "nonce" %q: want %d bytes in lowercase hex`, p.Nonce, NonceSize)
	}
	if p.AuditHead.Seq < 0 {
		return fmt.Errorf(`proposal: member "auditHead.seq" is %d, want 0 or more`, p.AuditHead.Seq)
	}
	if _, err := ParseDigest(p.AuditHead.Hash); err != nil {
		return fmt.Errorf(`proposal: member "auditHead.hash": %v`, err)
	}
	return nil
}

// sortedSet reports whether list is sorted and free of duplicates and
// empty strings.
func sortedSet(member string, list []string) error {
	for i, s := range list {
		if s == "" {
			return fmt.Errorf("proposal: member %q: entry %d empty", member, i)
		}
	}
	if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
		return fmt.Errorf("proposal: member %q: want sorted names without duplicates", member)
	}
	return nil
}
