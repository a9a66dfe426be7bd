package ceremony

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"sync"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/mcpepoch/mcpepoch/trust"
)

// Enrolled is the end of an enrollment.
type Enrolled struct {
	Authenticator trust.Authenticator // as written to the trust store
	// FirstUse is true when it is the first authenticator, enrolled without
	// a presence signature (trusted on first use): say so loudly.
	FirstUse bool
}

// Enrollment is one pending registration page.
type Enrollment struct {
	s     *Server
	name  string
	root  string // how the person was proven for a first enrollment; "" refuses one
	token string
	url   string
	done  chan Enrolled

	mu      sync.Mutex
	session *webauthn.SessionData // of the registration ceremony; nil once used
	change  *trust.Change         // proposed addition waiting for a presence signature
	ended   bool
}

// ErrRootNotAllowed refuses a registration that would be the first
// authenticator of the store when the page was not opened for one.
var ErrRootNotAllowed = errors.New("no authenticator is enrolled, and this page may not add the first: the first is trusted without a signature by another, so a person enrolls it with mcpepoch enroll in their own terminal")

// Enroll opens a registration page that adds one WebAuthn authenticator,
// named name, to the trust store. When an authenticator is already
// enrolled the page then asks for an assertion by one of them over the
// change's challenge (trust.Requirement) before the store is written.
//
// root says how the person was proven for a first enrollment, the store's
// root, which nothing signs (trust.EnrolledTerminal: the caller ran the
// person guard and asked at the terminal); it is kept in the entry. With
// root empty a registration while nothing is enrolled is refused
// (ErrRootNotAllowed), so a page opened while the store had an entry
// never adds a root unguarded.
func (s *Server) Enroll(name, root string) (*Enrollment, error) {
	if name == "" {
		return nil, errors.New("ceremony: an authenticator needs a name")
	}
	e := &Enrollment{s: s, name: name, root: root, done: make(chan Enrolled, 1)}
	e.token, e.url = s.add(e)
	return e, nil
}

// URL returns the page, http://localhost:PORT/TOKEN/.
func (e *Enrollment) URL() string { return e.url }

// Done delivers the enrolled authenticator once the store is written.
func (e *Enrollment) Done() <-chan Enrolled { return e.done }

// Cancel takes the page down; Done delivers nothing.
func (e *Enrollment) Cancel() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ended = true
	e.s.remove(e.token)
}

func (e *Enrollment) where() (string, string) { return "enrollment", e.url }

func (e *Enrollment) serve(w http.ResponseWriter, r *http.Request, step string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ended {
		e.s.refuse(w, "enrollment", e.url, ErrDecided)
		return
	}
	switch step {
	case "":
		e.page(w)
	case "register":
		e.register(w, r)
	case "confirm":
		e.confirm(w, r)
	default:
		http.NotFound(w, r)
	}
}

// page renders the registration page with fresh creation options; each
// load starts the ceremony again (a new challenge).
func (e *Enrollment) page(w http.ResponseWriter) {
	view := pageView{Kind: "enrollment", Name: e.name}
	store, err := trust.Open(e.s.cfg.TrustDir)
	if err == nil {
		u := userOf(store)
		exclude := make([]protocol.CredentialDescriptor, len(u.creds))
		for i, c := range u.creds {
			exclude[i] = c.Descriptor()
		}
		view.FirstUse = len(store.Authenticators) == 0
		var cc *protocol.CredentialCreation
		cc, e.session, err = e.s.rp.BeginRegistration(u, webauthn.WithExclusions(exclude),
			webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{UserVerification: e.s.userVerification()}),
			webauthn.WithConveyancePreference(protocol.PreferDirectAttestation),
			webauthn.WithRegistrationOrigin(e.s.origin))
		if err == nil {
			var b []byte
			b, err = json.Marshal(cc)
			view.Options = string(b)
		}
	}
	if err != nil {
		view.Error = err.Error()
	}
	render(w, view)
}

// register verifies the registration (WebAuthn §7.1, attestation asked
// for as "direct") and proposes the addition; the first authenticator is
// added at once, any other waits for confirm. An attestation statement
// other than "none" is kept with the entry and checked against the
// bundled vendor roots (trust.Authenticator.Attest).
func (e *Enrollment) register(w http.ResponseWriter, r *http.Request) {
	if e.session == nil {
		e.s.refuse(w, "enrollment", e.url, errors.New("no registration in progress: reload the page"))
		return
	}
	session := *e.session
	e.session = nil // a registration challenge is used once
	parsed, err := protocol.ParseCredentialCreationResponseBody(r.Body)
	if err != nil {
		e.s.refuse(w, "enrollment", e.url, describe(err))
		return
	}
	store, err := trust.Open(e.s.cfg.TrustDir)
	if err != nil {
		e.s.refuse(w, "enrollment", e.url, err)
		return
	}
	if len(store.Authenticators) == 0 && e.root == "" {
		e.s.refuse(w, "enrollment", e.url, ErrRootNotAllowed)
		return
	}
	cred, err := e.s.rp.CreateCredential(userOf(store), session, parsed)
	if err != nil {
		e.s.refuse(w, "enrollment", e.url, describe(err))
		return
	}
	a, err := trust.NewWebAuthn(trust.WebAuthnCredential{CredentialID: cred.ID, PublicKey: cred.PublicKey,
		AAGUID: cred.Authenticator.AAGUID, BackupEligible: cred.Flags.BackupEligible, AttestationType: cred.AttestationType},
		e.name, e.s.cfg.Now())
	a.Enrolled = e.root
	if f := parsed.Response.AttestationObject.Format; err == nil && f != "" && f != "none" {
		// Kept even when it does not chain to a bundled root: the entry
		// then says why it is unattested.
		h := sha256.Sum256(parsed.Raw.AttestationResponse.ClientDataJSON)
		a.Attest(&trust.Attestation{Format: f, Statement: parsed.Raw.AttestationResponse.AttestationObject, ClientDataHash: h[:]})
	}
	if err == nil {
		e.change, err = store.Propose(trust.OpAdd, a)
	}
	if err != nil {
		e.s.refuse(w, "enrollment", e.url, err)
		return
	}
	if !e.change.Requirement.Presence {
		e.apply(w, store, nil)
		return
	}
	opts, _, err := e.s.begin(store, e.change.Requirement.Challenge)
	if err != nil {
		e.s.refuse(w, "enrollment", e.url, errors.New("adding an authenticator needs a touch of an enrolled one, and none is a WebAuthn authenticator: sign with the enrolled ssh key instead"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"need": "presence", "options": opts})
}

// confirm verifies the enrolled authenticator's assertion over the
// change's challenge and writes the store.
func (e *Enrollment) confirm(w http.ResponseWriter, r *http.Request) {
	if e.change == nil {
		e.s.refuse(w, "enrollment", e.url, errors.New("nothing to confirm: register first"))
		return
	}
	body, err := readBody(r)
	if err != nil {
		e.s.refuse(w, "enrollment", e.url, err)
		return
	}
	store, err := trust.Open(e.s.cfg.TrustDir)
	if err != nil {
		e.s.refuse(w, "enrollment", e.url, err)
		return
	}
	p, err := e.s.verify(store, e.change.Requirement.Challenge, body)
	if err != nil {
		e.s.refuse(w, "enrollment", e.url, err)
		return
	}
	e.apply(w, store, &p)
}

func (e *Enrollment) apply(w http.ResponseWriter, store *trust.Store, p *trust.Presence) {
	c := e.change
	if err := store.Apply(c, p); err != nil {
		e.change = nil
		e.s.refuse(w, "enrollment", e.url, err)
		return
	}
	a, _ := store.Lookup(c.Authenticator.ID)
	e.ended = true
	e.s.remove(e.token)
	e.done <- Enrolled{Authenticator: *a, FirstUse: p == nil}
	writeJSON(w, http.StatusOK, map[string]any{"enrolled": a.ID, "firstUse": p == nil})
}
