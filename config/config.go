// Package config reads mcpepoch.toml, the optional per-project settings file
// that both the build hook and the host read from the project root.
//
// Every key is optional; command-line flags win over the file. Unknown keys
// are errors, so a misspelt key is reported instead of silently ignored.
// By default every tool needs a grant (seed: "authorization follows the
// execution epoch"); annotations such as readOnlyHint never exempt one.
//
// The format, key by key with its defaults, is described once, in
// docs/formats.md ("mcpepoch.toml"); Config, Host, Grants and Credential
// are its Go form, and their fields' docs say how each value is read.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/bmatcuk/doublestar/v4"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// FileName is the name of the settings file in the project root.
const FileName = "mcpepoch.toml"

// Config is the content of mcpepoch.toml.
type Config struct {
	Label     string   `toml:"label"`
	Command   []string `toml:"command"`
	Entry     string   `toml:"entry"`
	Lockfiles []string `toml:"lockfiles"`
	Code      []string `toml:"code"`
	Deps      []string `toml:"deps"`
	Env       []string `toml:"env"`
	EnvFiles  []string `toml:"env_files"`
	// Data names files the server writes that its launch command names
	// (--db ./state.db), as doublestar patterns relative to the project
	// root: they are not hashed (build.Spec.Data).
	Data   []string `toml:"data"`
	Host   Host     `toml:"host"`
	Grants Grants   `toml:"grants"`
	// Credentials maps a credential scope's name to its settings.
	Credentials map[string]Credential `toml:"credentials"`
	// AllowSelfReload lets mcpepoch host run a launch command that reloads
	// code in-process (node --watch, nodemon, uvicorn --reload …), which it
	// refuses otherwise (package host, selfreload.go).
	AllowSelfReload bool `toml:"allow_self_reload"`

	// Path is the file the configuration was read from; empty when there
	// was none.
	Path string `toml:"-"`
}

// Host holds the host's settings.
type Host struct {
	// Grace is how long a stopping server gets after SIGTERM before its
	// process group is killed, as a Go duration ("5s"). Empty means 5s.
	Grace string `toml:"grace"`
	// Restart is the restart mode: "keep" (default), "close" or "manual".
	Restart string `toml:"restart"`
	// FirstStartWait is how long the host holds the client's initialize
	// while no server of it has ever started (the project is not built
	// yet), a duration such as "3m"; see FirstStartWait.
	FirstStartWait string `toml:"first_start_wait"`
	// Drain is how long, at a restart, the old server gets to answer the
	// requests it has in flight (its stdin still open, no new request
	// sent to it) before those still unanswered get server_restarted and
	// it is stopped, as a Go duration; empty means DefaultDrain, "0s"
	// answers them at once. See Drain.
	Drain string `toml:"drain"`
	// InitTimeout bounds how long the server gets to answer initialize
	// (the client's, or the host's replay after a restart) and each other
	// request the host sends it itself (tools/list), as a Go duration;
	// empty means DefaultInitTimeout. See InitTimeout.
	InitTimeout string `toml:"init_timeout"`
	// DrainStart says when the new server starts during a drain:
	// DrainStartAfter (default) once the old one has exited, or
	// DrainStartDuring at once, beside the old one while it drains.
	DrainStart string `toml:"drain_start"`
}

// Values of host.drain_start. "after" is the default because two
// processes of one server at once break a server that holds a port, a
// lock file or a database open exclusively: the new one fails to start,
// or worse, both write. "during" saves the drain's latency for servers
// that hold nothing of the kind.
const (
	DrainStartAfter  = "after"
	DrainStartDuring = "during"
)

// Grants holds the grant policy.
type Grants struct {
	// Exempt lists tools, by name or doublestar glob, that need no grant.
	Exempt []string `toml:"exempt"`
	// Proof lists the proof levels that count as a person's approval:
	// "presence" (a FIDO authenticator signed the grant), "terminal" (a
	// person answered mcpepoch approve at an interactive terminal),
	// "client" (the person accepted in the MCP client's own UI),
	// "same-user" (any process of the same OS user, mcpepoch approve --yes
	// included: for scripts, CI and tests, never proof of a person).
	// Unset: ["presence"] once an authenticator is enrolled, else
	// ["terminal", "client"] (package grant applies it).
	Proof []string `toml:"proof"`
	// ApprovalWait is how long a tools/call that needs a grant is held
	// while the host asks a person through the MCP client (elicitation),
	// as a Go duration ("2m"). Empty means DefaultApprovalWait; "0s" never
	// holds a call (the call is refused at once, as for a client without
	// elicitation).
	ApprovalWait string `toml:"approval_wait"`
	// Attestation is AttestationRequired or AttestationOptional (the
	// default, when empty). Required: a presence signature counts only by
	// an authenticator whose FIDO attestation chains to a bundled vendor
	// root (package trust), so a key an agent made in software, even
	// enrolled as the root, never proves presence.
	Attestation string `toml:"attestation"`
}

// Values of grants.attestation.
const (
	AttestationRequired = "required"
	AttestationOptional = "optional"
)

// DefaultApprovalWait is grants.approval_wait when unset: under the 60 s
// request timeout of the TypeScript SDK's client (and of the clients built
// on it, which do not restart it on progress), so that a call nobody
// approves ends with the host's authorization_required, which names the
// command that approves, rather than the client's generic timeout.
// docs/approval.md lists the timeouts of real clients.
const DefaultApprovalWait = 50 * time.Second

// ApprovalWait returns grants.approval_wait, DefaultApprovalWait when
// unset; an error for a value that is not a duration of zero or more.
func (c *Config) ApprovalWait() (time.Duration, error) {
	if c.Grants.ApprovalWait == "" {
		return DefaultApprovalWait, nil
	}
	d, err := time.ParseDuration(c.Grants.ApprovalWait)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %s", d)
	}
	return d, nil
}

// ProofLevels are the values grants.proof and credentials.NAME.proof
// accept, strongest first.
var ProofLevels = []string{"presence", "terminal", "client", "same-user"}

// Credential is one credential scope. Only its name is ever stored or
// logged. At most one of Env, File and Command says where its secret is
// (package credsource reads it, only for a call a person approved); with
// none, mcpepoch hands nothing over and the server finds the secret itself.
// credentials.go checks the values.
type Credential struct {
	// Tools lists the tools, by name or doublestar glob, that use the scope.
	Tools []string `toml:"tools"`
	// PerCall: every call that uses the scope needs a fresh human decision,
	// even inside a valid grant.
	PerCall bool `toml:"per_call"`
	// Proof, when set, is a proof list (see Grants.Proof) for grants that
	// name this scope; where it and grants.proof disagree, the stricter
	// applies (grant.Policy.Proof).
	Proof []string `toml:"proof"`
	// Env names a variable of the host's own environment holding the
	// secret: read once when the host starts, then left out of what the
	// server inherits.
	Env string `toml:"env"`
	// File is an absolute path ("~/" for the home directory) of a file
	// outside the project holding the secret: a regular file owned by the
	// user, mode 0600 or stricter, checked each time it is read.
	File string `toml:"file"`
	// Command is run (no shell) when a call a person approved first needs
	// the secret; its standard output, trimmed, is the secret.
	Command []string `toml:"command"`
	// Deliver is how the server gets the secret: DeliverBroker (the
	// default: it asks the host's per-epoch socket during the call) or
	// DeliverEnv (the server is launched with the variable As, once a
	// person approved the epoch).
	Deliver string `toml:"deliver"`
	// As is the variable the secret is put in for DeliverEnv.
	As string `toml:"as"`
}

// Error reports a problem in the settings file, naming the file and, where
// known, the key.
type Error struct {
	Path string
	Line int // 1-based line of Key, 0 when not known
	Col  int // 1-based column (bytes) of a syntax error, 0 when not known
	Key  string
	Err  error
}

// Error returns "PATH[:LINE[:COL]]: [KEY: ]ERR".
func (e *Error) Error() string {
	where := e.Path
	if e.Line > 0 {
		where += ":" + strconv.Itoa(e.Line)
		if e.Col > 0 {
			where += ":" + strconv.Itoa(e.Col)
		}
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %v", where, e.Key, e.Err)
	}
	return fmt.Sprintf("%s: %v", where, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// MaxSize is the largest settings file Load reads, in bytes.
const MaxSize = 1 << 20

// Load reads FileName in dir. A missing file yields a zero Config and no
// error. Syntax errors, unknown keys and bad values are returned as *Error,
// and so is a path that is not a regular file (a FIFO, a device; a
// symbolic link to a regular file is followed) or a file over MaxSize. Load
// never blocks on what the path names.
func Load(dir string) (*Config, error) {
	p := filepath.Join(dir, FileName)
	var c Config
	b, err := safefile.ReadFile(p, MaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if r := safefile.Refusal(err); r != nil {
		return nil, &Error{Path: p, Err: r}
	}
	if err != nil {
		return nil, err
	}
	if line, err := checkNesting(b); err != nil {
		return nil, &Error{Path: p, Line: line, Err: err}
	}
	md, err := toml.Decode(string(b), &c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, syntaxError(p, b, pe)
		}
		if te := typeError(p, err); te != nil {
			return nil, te
		}
		return nil, &Error{Path: p, Err: err}
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return nil, &Error{Path: p, Key: keys[0], Err: fmt.Errorf("unknown key (known: label, command, entry, allow_self_reload, lockfiles, code, deps, env, env_files, host.grace, host.restart, host.first_start_wait, host.drain, host.drain_start, host.init_timeout, grants.exempt, grants.proof, grants.approval_wait, grants.attestation, credentials.NAME.tools, credentials.NAME.per_call, credentials.NAME.proof, credentials.NAME.env, credentials.NAME.file, credentials.NAME.command, credentials.NAME.deliver, credentials.NAME.as; unknown here: %s)", strings.Join(keys, ", "))}
	}
	c.Path = p
	if _, err := c.Grace(); err != nil {
		return nil, &Error{Path: p, Key: "host.grace", Err: err}
	}
	if _, err := c.ApprovalWait(); err != nil {
		return nil, &Error{Path: p, Key: "grants.approval_wait", Err: err}
	}
	if _, err := c.FirstStartWait(); err != nil {
		return nil, &Error{Path: p, Key: "host.first_start_wait", Err: err}
	}
	if _, err := c.Drain(); err != nil {
		return nil, &Error{Path: p, Key: "host.drain", Err: err}
	}
	if d, err := c.InitTimeout(); err != nil || d == 0 {
		if err == nil {
			err = errors.New("zero: want a positive duration")
		}
		return nil, &Error{Path: p, Key: "host.init_timeout", Err: err}
	}
	if d := c.Host.DrainStart; d != "" && d != DrainStartAfter && d != DrainStartDuring {
		return nil, &Error{Path: p, Key: "host.drain_start", Err: fmt.Errorf("%q: want %q or %q", d, DrainStartAfter, DrainStartDuring)}
	}
	for _, g := range c.Data {
		if !doublestar.ValidatePattern(g) || filepath.IsAbs(g) || strings.HasPrefix(build.CleanPattern(g), "../") {
			return nil, &Error{Path: p, Key: "data", Err: fmt.Errorf("%q: want a glob relative to the project root, inside it", g)}
		}
	}
	for _, g := range c.Grants.Exempt {
		if !doublestar.ValidatePattern(g) {
			return nil, &Error{Path: p, Key: "grants.exempt", Err: fmt.Errorf("bad glob %q", g)}
		}
	}
	if err := checkProof(c.Grants.Proof); err != nil {
		return nil, &Error{Path: p, Key: "grants.proof", Err: err}
	}
	if a := c.Grants.Attestation; a != "" && a != AttestationRequired && a != AttestationOptional {
		return nil, &Error{Path: p, Key: "grants.attestation", Err: fmt.Errorf("%q: want %q or %q", a, AttestationRequired, AttestationOptional)}
	}
	for name, cr := range c.Credentials {
		if err := checkProof(cr.Proof); err != nil {
			return nil, &Error{Path: p, Key: "credentials." + name + ".proof", Err: err}
		}
		for _, g := range cr.Tools {
			if !doublestar.ValidatePattern(g) {
				return nil, &Error{Path: p, Key: "credentials." + name + ".tools", Err: fmt.Errorf("bad glob %q", g)}
			}
		}
		if key, err := checkCredential(dir, cr); err != nil {
			return nil, &Error{Path: p, Key: "credentials." + name + "." + key, Err: err}
		}
	}
	if err := checkCode(dir, c.Code); err != nil {
		return nil, &Error{Path: p, Key: "code", Err: err}
	}
	if !validRestart(c.Host.Restart) {
		return nil, &Error{Path: p, Key: "host.restart", Err: fmt.Errorf("%q is not one of keep, close, manual", c.Host.Restart)}
	}
	return &c, nil
}

// checkProof reports a proof list that names an unknown level, repeats
// one, or is set but empty (nil, unset, is fine).
func checkProof(list []string) error {
	if list != nil && len(list) == 0 {
		return fmt.Errorf("empty list: name at least one of %s, or leave the key out", strings.Join(ProofLevels, ", "))
	}
	seen := map[string]bool{}
	for _, l := range list {
		if !slices.Contains(ProofLevels, l) {
			return fmt.Errorf("%q is not a proof level (want %s)", l, strings.Join(ProofLevels, ", "))
		}
		if seen[l] {
			return fmt.Errorf("%q named twice", l)
		}
		seen[l] = true
	}
	return nil
}

// Spec returns the identity inputs the file names, for build.Compute.
// Command and Dir are left to the caller.
func (c *Config) Spec(root string) build.Spec {
	return build.Spec{Dir: root, Entry: c.Entry, Lockfiles: c.Lockfiles, Code: c.Code, Deps: c.Deps,
		EnvNames: c.Env, EnvFiles: c.EnvFiles, Data: c.Data, CacheDir: layout.Cache(root), EnvKeyFile: layout.DigestKey(root)}
}

// Grace returns Host.Grace as a duration, 5s when unset.
func (c *Config) Grace() (time.Duration, error) {
	return duration(c.Host.Grace, 5*time.Second)
}

// DefaultFirstStartWait is host.first_start_wait when unset.
const DefaultFirstStartWait = 3 * time.Minute

// FirstStartWait returns Host.FirstStartWait as a duration,
// DefaultFirstStartWait when unset.
func (c *Config) FirstStartWait() (time.Duration, error) {
	return duration(c.Host.FirstStartWait, DefaultFirstStartWait)
}

// DefaultDrain is host.drain when unset: long enough for a tool call
// that was about to finish, short against a client's request timeout
// (60 s in the TypeScript SDK), since the restart waits for it.
const DefaultDrain = 3 * time.Second

// Drain returns Host.Drain as a duration, DefaultDrain when unset.
func (c *Config) Drain() (time.Duration, error) {
	return duration(c.Host.Drain, DefaultDrain)
}

// DefaultInitTimeout is host.init_timeout when unset.
const DefaultInitTimeout = 30 * time.Second

// InitTimeout returns Host.InitTimeout as a duration, DefaultInitTimeout
// when unset.
func (c *Config) InitTimeout() (time.Duration, error) {
	return duration(c.Host.InitTimeout, DefaultInitTimeout)
}

// duration parses a duration setting of zero or more, def when unset.
func duration(s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %s", d)
	}
	return d, nil
}
