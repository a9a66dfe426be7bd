// Package ceremony runs WebAuthn ceremonies on a loopback page for
// mcpepoch: the registration ceremony that enrolls an authenticator in the
// trust store (a page with a "Register" button), and the authentication
// ceremony that approves a grant (a page with "Approve" and "Decline"),
// whose challenge is the grant's Digest.
//
// A Server listens on the loopback interface and is reached as
// http://localhost:PORT (WebAuthn accepts "localhost" as relying party ID
// and Chromium treats it as a secure context; an IP address is not a valid
// RP ID). Every ceremony has its own page behind a one-time path token,
// http://localhost:PORT/TOKEN/. Because the RP ID is "localhost" for every
// port, an assertion made for one port's page is valid WebAuthn for any
// other: the Server checks the exact origin including its own port, the
// Host header, the challenge, the signature counter (recorded in the trust
// store before a decision is delivered, WebAuthn §6.1.1), single use, user
// presence always and user verification when Config.RequireUV.
//
// Results reach the caller through Go: Approval.Decided and
// Enrollment.Done deliver one verified outcome each; Config.Refused hears
// of every refused attempt, so the caller can audit it.
package ceremony

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
)

// MaxBody caps a ceremony response posted to the server (a real one is a
// few KiB).
const MaxBody = 64 << 10

// RPID is the relying party ID of every ceremony.
const RPID = "localhost"

// Config says how a Server runs.
type Config struct {
	// TrustDir is the trust store's directory (trust.DefaultDir()). It is
	// opened, and its owner and modes checked, on every ceremony step.
	TrustDir string
	// RequireUV requires user verification (a PIN or biometric), not only
	// presence, in every ceremony: mcpepoch.toml's proof_uv.
	RequireUV bool
	// Addr is the loopback address to listen on; "127.0.0.1:0" (a free
	// port) when empty. It must be a loopback address.
	Addr string
	// Refused, when set, is called for every refused attempt (a bad
	// assertion, a replay, a superseded challenge …), from the request's
	// goroutine; it must not block.
	Refused func(Refusal)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Refusal is a ceremony step the Server refused.
type Refusal struct {
	Ceremony string // "approval" or "enrollment"
	URL      string // the ceremony's page
	Reason   error
	At       time.Time
}

// Server serves ceremony pages. Its methods are safe for concurrent use.
type Server struct {
	cfg    Config
	ln     net.Listener
	srv    *http.Server
	origin string // http://localhost:PORT
	host   string // localhost:PORT
	rp     *webauthn.WebAuthn

	mu    sync.Mutex
	pages map[string]page // path token → ceremony
}

// page is one ceremony behind a path token.
type page interface {
	serve(w http.ResponseWriter, r *http.Request, step string)
	where() (ceremony, url string) // for Refusal
}

// Listen starts a Server on cfg.Addr. Close stops it.
func Listen(cfg Config) (*Server, error) {
	if cfg.TrustDir == "" {
		return nil, errors.New("ceremony: no trust store directory")
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h, _, err := net.SplitHostPort(cfg.Addr)
	if ip := net.ParseIP(h); err != nil || ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("ceremony: listen address %q: want a loopback IP and port", cfg.Addr)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("ceremony: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	s := &Server{cfg: cfg, ln: ln, pages: map[string]page{},
		host: "localhost:" + strconv.Itoa(port), origin: "http://localhost:" + strconv.Itoa(port)}
	s.rp, err = webauthn.New(&webauthn.Config{RPID: RPID, RPDisplayName: "mcpepoch", RPOrigins: []string{s.origin}})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("ceremony: %w", err)
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10}
	go s.srv.Serve(ln)
	return s, nil
}

// Origin returns the server's origin, http://localhost:PORT.
func (s *Server) Origin() string { return s.origin }

// Close stops the server; pending ceremonies end without a decision.
func (s *Server) Close() error { return s.srv.Close() }

// add registers p under a fresh path token and returns its URL.
func (s *Server) add(p page) (token, url string) {
	b := make([]byte, 32)
	rand.Read(b)
	token = base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	s.pages[token] = p
	s.mu.Unlock()
	return token, s.origin + "/" + token + "/"
}

func (s *Server) remove(token string) {
	s.mu.Lock()
	delete(s.pages, token)
	s.mu.Unlock()
}

// ServeHTTP routes /TOKEN/ (the page, GET) and /TOKEN/STEP (POST, JSON).
// It refuses a Host other than localhost:PORT (DNS rebinding), and a POST
// whose Origin is not exactly the server's origin or whose body is not
// JSON.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	if r.Host != s.host {
		http.Error(w, "wrong host", http.StatusMisdirectedRequest)
		return
	}
	token, step, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	s.mu.Lock()
	p := s.pages[token]
	s.mu.Unlock()
	if !ok || p == nil || strings.Contains(step, "/") {
		http.NotFound(w, r)
		return
	}
	switch {
	case step == "" && r.Method == http.MethodGet:
	case step != "" && r.Method == http.MethodPost:
		if o := r.Header.Get("Origin"); o != s.origin {
			c, u := p.where()
			s.refuse(w, c, u, fmt.Errorf("posted from origin %q, not this page's %s", o, s.origin))
			return
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "want application/json"})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p.serve(w, r, step)
}

// refuse reports a refused step to the page (403 with {"error": …}) and to
// Config.Refused.
func (s *Server) refuse(w http.ResponseWriter, ceremony, url string, err error) {
	if s.cfg.Refused != nil {
		s.cfg.Refused(Refusal{Ceremony: ceremony, URL: url, Reason: err, At: s.cfg.Now()})
	}
	writeJSON(w, http.StatusForbidden, map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the response: %v", err)
	}
	return b, nil
}
