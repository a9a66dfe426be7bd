package ceremony

import (
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/trust"
)

// userHandle is the WebAuthn user.id of every credential: the trust store
// has one user, the person at this machine.
var userHandle = []byte("mcpepoch")

// Errors of a refused assertion, besides those go-webauthn reports.
var (
	ErrNotEnrolled = errors.New("no enrolled WebAuthn authenticator")
	ErrCloned      = errors.New("signature counter did not increase: a replayed assertion or a cloned authenticator")
	ErrDecided     = errors.New("this request was already decided; a ceremony is used once")
	ErrSuperseded  = errors.New("this request was replaced by a newer one: reload the page and review it again")
)

// rpUser is the trust store's WebAuthn credentials as go-webauthn's User.
type rpUser struct{ creds []webauthn.Credential }

func (u rpUser) WebAuthnID() []byte                         { return userHandle }
func (u rpUser) WebAuthnName() string                       { return "mcpepoch" }
func (u rpUser) WebAuthnDisplayName() string                { return "mcpepoch" }
func (u rpUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// userOf returns the WebAuthn credentials of store as a User.
func userOf(store *trust.Store) rpUser {
	var u rpUser
	for _, a := range store.Kind(trust.KindWebAuthn) {
		w := a.WebAuthn
		u.creds = append(u.creds, webauthn.Credential{ID: w.CredentialID, PublicKey: w.PublicKey,
			AttestationType: w.AttestationType,
			Flags:           webauthn.CredentialFlags{UserPresent: true, BackupEligible: w.BackupEligible},
			Authenticator:   webauthn.Authenticator{AAGUID: w.AAGUID, SignCount: a.SignCount}})
	}
	return u
}

func (s *Server) userVerification() protocol.UserVerificationRequirement {
	if s.cfg.RequireUV {
		return protocol.VerificationRequired
	}
	return protocol.VerificationDiscouraged
}

// begin returns the request options and session of an authentication
// ceremony over challenge, allowing only the enrolled WebAuthn credentials
// of store and bound to this server's origin.
func (s *Server) begin(store *trust.Store, challenge grant.Digest) (*protocol.CredentialAssertion, *webauthn.SessionData, error) {
	u := userOf(store)
	if len(u.creds) == 0 {
		return nil, nil, ErrNotEnrolled
	}
	allow := make([]protocol.CredentialDescriptor, len(u.creds))
	for i, c := range u.creds {
		allow[i] = c.Descriptor()
	}
	return s.rp.BeginLogin(u, webauthn.WithChallenge(challenge[:]), webauthn.WithAllowedCredentials(allow),
		webauthn.WithUserVerification(s.userVerification()), webauthn.WithLoginOrigin(s.origin))
}

// verify checks body, a PublicKeyCredential (toJSON form) from
// navigator.credentials.get, as an assertion over challenge by a WebAuthn
// authenticator enrolled in store: origin exactly this server's, RP ID
// localhost, challenge, signature, user presence, user verification when
// required, a counter that grew. It returns the verified presence; the
// counter is not yet recorded.
func (s *Server) verify(store *trust.Store, challenge grant.Digest, body []byte) (trust.Presence, error) {
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return trust.Presence{}, describe(err)
	}
	_, session, err := s.begin(store, challenge)
	if err != nil {
		return trust.Presence{}, err
	}
	cred, err := s.rp.ValidateLogin(userOf(store), *session, parsed)
	if err != nil {
		return trust.Presence{}, describe(err)
	}
	if cred.Authenticator.CloneWarning {
		return trust.Presence{}, ErrCloned
	}
	flags := parsed.Response.AuthenticatorData.Flags
	return trust.Presence{AuthenticatorID: base64.RawURLEncoding.EncodeToString(cred.ID), Challenge: challenge,
		SignCount: parsed.Response.AuthenticatorData.Counter, UserVerified: flags.HasUserVerified(),
		Assertion: &trust.Assertion{AuthenticatorData: parsed.Raw.AssertionResponse.AuthenticatorData,
			ClientDataJSON: parsed.Raw.AssertionResponse.ClientDataJSON, Signature: parsed.Raw.AssertionResponse.Signature}}, nil
}

// clientChallenge returns the challenge an assertion's client data names,
// to tell a superseded request from a forged one.
func clientChallenge(body []byte) (grant.Digest, bool) {
	parsed, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return grant.Digest{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(parsed.Response.CollectedClientData.Challenge)
	var d grant.Digest
	if err != nil || len(b) != len(d) {
		return d, false
	}
	copy(d[:], b)
	return d, true
}

// describe turns go-webauthn's error into one sentence with its details.
func describe(err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		msg := pe.Details
		if pe.DevInfo != "" {
			msg += ": " + pe.DevInfo
		}
		return fmt.Errorf("WebAuthn: %s", msg)
	}
	return fmt.Errorf("WebAuthn: %v", err)
}
