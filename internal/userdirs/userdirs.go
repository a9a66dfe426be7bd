// Package userdirs names the user's own directories where mcpepoch keeps
// what guards a project, config and state, from the account database,
// never from the environment.
//
// The config directory holds the trust store and the policy floors
// (package trust), the state directory the copy of each project's audit
// head (internal/layout). A program confined to a project can still write
// a client config inside it (.mcp.json, .vscode/mcp.json,
// .cursor/mcp.json), whose entry's env sets the environment of the next
// host the client starts: were HOME, XDG_CONFIG_HOME or XDG_STATE_HOME
// followed, it could point them at a directory of its own, enroll a key
// in an empty trust store, accept a weaker floor and rewrite the audit log
// together with the copy of its head. So the home directory is the one the
// account database gives the process's real user id
// (user.LookupId(getuid): /etc/passwd in a build without cgo, NSS with
// cgo, the directory services through libSystem on macOS; on Linux, where
// that finds no entry, /usr/bin/getent passwd run with an empty
// environment, which asks NSS: LDAP, SSSD), and:
//
//	config  Linux and other unix: <home>/.config/mcpepoch
//	        macOS: <home>/Library/Application Support/mcpepoch
//	state   Linux and other unix: <home>/.local/state/mcpepoch
//	        macOS: <home>/Library/Application Support/mcpepoch/state
//
// A user the account database does not know, or whose home there is not
// an absolute path, has neither: the error names the cause, and callers
// fail closed (no config directory is a missing policy floor: presence
// only; no state directory keeps the audit head in the project only).
//
// Tests need directories of their own, never the user's: a test binary
// (testing.Testing) and a binary built with -tags mcpepochtest (the
// end-to-end tests' build, internal/testenv.Mcpepoch) follow the
// environment by the rules of os.UserConfigDir and the XDG Base Directory
// specification instead (FollowsEnv). A product build has no such seam.
package userdirs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The variables a build that follows the environment takes the
// directories from, and that a product build does not follow.
const (
	HomeEnv   = "HOME"
	ConfigEnv = "XDG_CONFIG_HOME"
	StateEnv  = "XDG_STATE_HOME"
)

// follow is whether this build may take the directories from its
// environment: only a test binary, or a build with -tags mcpepochtest
// (testBuild, seam_*.go).
var follow = testBuild || testing.Testing()

// AsProductEnv, set to "1", makes a build that follows the environment
// take the directories as a product build does, from the account
// database: a test of the product's behaviour sets it (t.Setenv, so not in
// parallel with other tests). It only ever turns the environment off; in
// a product build, which never follows it, it changes nothing.
const AsProductEnv = "MCPEPOCH_USERDIRS_AS_PRODUCT"

// FollowsEnv reports whether this build takes the directories from the
// environment (HOME, XDG_CONFIG_HOME, XDG_STATE_HOME): true only in a
// test binary and a build with -tags mcpepochtest, unless AsProductEnv is
// set; never in a product build.
func FollowsEnv() bool { return follow && os.Getenv(AsProductEnv) != "1" }

// Home returns the user's home directory: from the account database (the
// entry of the real user id), or, in a build that follows the
// environment, $HOME (os.UserHomeDir). The error names the uid and the
// cause: no entry, or a home that is not an absolute path.
func Home() (string, error) {
	if FollowsEnv() {
		if h := os.Getenv(HomeEnv); h != "" {
			return h, nil
		}
		return "", errors.New("$HOME is not defined")
	}
	return accountHome()
}

// Config returns mcpepoch's config directory (the trust store, the policy
// floors): under Home, <home>/.config/mcpepoch, or on macOS
// <home>/Library/Application Support/mcpepoch. In a build that follows
// the environment, os.UserConfigDir's rules: $XDG_CONFIG_HOME/mcpepoch
// when set (it must be absolute; not on macOS), else under $HOME. The
// error says why there is none.
func Config() (string, error) { return ConfigFor(os.Getenv) }

// ConfigFor is Config for a process of this build whose environment getenv
// reads (mcpepoch doctor asks it for the environment a client config
// gives a host): a product build ignores getenv and answers Config.
func ConfigFor(getenv func(string) string) (string, error) {
	if FollowsEnv() {
		return configFromEnv(runtime.GOOS, getenv)
	}
	config, _, err := Account()
	if err != nil {
		return "", fmt.Errorf("no config directory: %w", err)
	}
	return config, nil
}

// State returns mcpepoch's state directory (the copies of the audit
// heads, one directory per project): <home>/.local/state/mcpepoch, or on
// macOS <home>/Library/Application Support/mcpepoch/state. In a build
// that follows the environment, $XDG_STATE_HOME/mcpepoch when it is
// absolute, else under $HOME (which must be absolute). The error says why
// there is none.
func State() (string, error) {
	if FollowsEnv() {
		return stateFromEnv(runtime.GOOS, os.Getenv)
	}
	_, state, err := Account()
	if err != nil {
		return "", fmt.Errorf("no state directory: %w", err)
	}
	return state, nil
}

// Account returns the config and state directories a product build uses,
// under the home directory the account database gives the user, in every
// build: a test that runs a product binary asks it where that binary
// keeps its files. The error is Home's.
func Account() (config, state string, err error) {
	home, err := accountHome()
	if err != nil {
		return "", "", err
	}
	return configUnder(runtime.GOOS, home), stateUnder(runtime.GOOS, home), nil
}

// configUnder is the config directory under home on goos.
func configUnder(goos, home string) string {
	if goos == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "mcpepoch")
	}
	return filepath.Join(home, ".config", "mcpepoch")
}

// stateUnder is the state directory under home on goos: the XDG Base
// Directory default, or on macOS, which keeps an application's own files
// in ~/Library/Application Support, a directory of its own beside the
// config directory's files.
func stateUnder(goos, home string) string {
	if goos == "darwin" {
		return filepath.Join(home, "Library", "Application Support", "mcpepoch", "state")
	}
	return filepath.Join(home, ".local", "state", "mcpepoch")
}

// configFromEnv is the config directory a process on goos with the
// environment getenv finds by os.UserConfigDir's rules, or why it finds
// none.
func configFromEnv(goos string, getenv func(string) string) (string, error) {
	var d string
	switch {
	case goos == "darwin":
		if d = getenv(HomeEnv); d == "" {
			return "", errors.New("$HOME is not defined")
		}
		d = filepath.Join(d, "Library", "Application Support")
	case getenv(ConfigEnv) != "":
		if d = getenv(ConfigEnv); !filepath.IsAbs(d) {
			return "", fmt.Errorf("path in $XDG_CONFIG_HOME is relative (%q)", d)
		}
	default:
		if d = getenv(HomeEnv); d == "" {
			return "", errors.New("neither $XDG_CONFIG_HOME nor $HOME are defined")
		}
		d = filepath.Join(d, ".config")
	}
	return filepath.Join(d, "mcpepoch"), nil
}

// stateFromEnv is the state directory a process on goos with the
// environment getenv finds: $XDG_STATE_HOME/mcpepoch when absolute, else
// under $HOME when absolute, or why it finds none.
func stateFromEnv(goos string, getenv func(string) string) (string, error) {
	if x := getenv(StateEnv); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "mcpepoch"), nil
	}
	home := getenv(HomeEnv)
	if home == "" || !filepath.IsAbs(home) {
		return "", errors.New("no state directory: " + StateEnv + " is not an absolute path and HOME is not set to one")
	}
	return stateUnder(goos, home), nil
}

// lookupID is user.LookupId; tests replace it.
var lookupID = user.LookupId

// account caches the account database's answer: it is asked once per
// process.
var account struct {
	sync.Mutex
	done bool
	home string
	err  error
}

// accountHome returns the home directory the account database gives the
// process's real user id, or an error naming the uid and the cause.
func accountHome() (string, error) {
	account.Lock()
	defer account.Unlock()
	if !account.done {
		account.home, account.err = lookupHome(os.Getuid())
		account.done = true
	}
	return account.home, account.err
}

// lookupHome asks the account database for uid's home directory: Go's
// own lookup, and where it finds no entry on Linux (a build without cgo
// reads /etc/passwd only, and a directory service (LDAP, SSSD) is asked
// through NSS), getent's answer (nssHome).
func lookupHome(uid int) (string, error) {
	id := strconv.Itoa(uid)
	u, err := lookupID(id)
	if err != nil && runtime.GOOS == "linux" {
		if home, nerr := nssHome(id); nerr == nil {
			u, err = &user.User{Uid: id, HomeDir: home}, nil
		} else {
			err = fmt.Errorf("%v; %v", err, nerr)
		}
	}
	if err != nil {
		return "", fmt.Errorf("the account database has no usable entry for uid %s (%v): mcpepoch takes the home directory from it, never from $HOME; "+
			"give the user an entry with a home directory (getent passwd %s shows what the system answers; a build without cgo reads /etc/passwd only)", id, err, id)
	}
	if !filepath.IsAbs(u.HomeDir) {
		return "", fmt.Errorf("the account database gives uid %s the home directory %q, not an absolute path: mcpepoch takes the home directory from it, never from $HOME; "+
			"give the user an absolute home directory", id, u.HomeDir)
	}
	return filepath.Clean(u.HomeDir), nil
}

// getent is the program nssHome runs, by absolute path: the system's, not
// one a PATH names. Tests replace it.
var getent = "/usr/bin/getent"

// nssHome asks NSS for uid's home directory through getent passwd, the
// way the C library's getpwuid does (nsswitch.conf: files, LDAP, SSSD…).
// getent runs from its absolute path with an empty environment, so that
// nothing the host's environment holds (PATH, LD_PRELOAD, LD_LIBRARY_PATH,
// a client config's env) chooses what answers; nsswitch.conf and the
// modules it loads are the system's. It returns the sixth field of the
// one line getent prints, or an error.
func nssHome(uid string) (string, error) {
	cmd := exec.Command(getent, "passwd", uid)
	cmd.Env = []string{}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s passwd %s: %v", getent, uid, err)
	}
	line, _, _ := strings.Cut(string(out), "\n")
	f := strings.Split(line, ":")
	if len(f) < 7 || f[2] != uid {
		return "", fmt.Errorf("%s passwd %s: not a passwd entry of uid %s: %q", getent, uid, uid, line)
	}
	return f[5], nil
}

// Unfollowed is a variable of the environment that would name another
// directory for mcpepoch's config or state than the one this build uses.
type Unfollowed struct {
	Var   string // HOME, XDG_CONFIG_HOME or XDG_STATE_HOME
	What  string // "config" or "state"
	Named string // the directory the variable would have named
	Uses  string // the directory used
}

// NotFollowed returns the variables of the environment getenv that, were
// they followed (os.UserConfigDir's rules for config, XDG_STATE_HOME for
// state), would name another directory than Config and State, config
// first; nil in a build that follows the environment, and for a directory
// that either side cannot name. HOME is listed once, for config when it
// moves both.
func NotFollowed(getenv func(string) string) []Unfollowed {
	if FollowsEnv() {
		return nil
	}
	home, err := accountHome()
	if err != nil {
		return nil
	}
	var out []Unfollowed
	if d, err := configFromEnv(runtime.GOOS, getenv); err == nil {
		if uses := configUnder(runtime.GOOS, home); d != uses {
			v := HomeEnv
			if runtime.GOOS != "darwin" && getenv(ConfigEnv) != "" {
				v = ConfigEnv
			}
			out = append(out, Unfollowed{Var: v, What: "config", Named: d, Uses: uses})
		}
	}
	if d, err := stateFromEnv(runtime.GOOS, getenv); err == nil {
		if uses := stateUnder(runtime.GOOS, home); d != uses {
			v := HomeEnv
			if x := getenv(StateEnv); x != "" && filepath.IsAbs(x) {
				v = StateEnv
			}
			if v != HomeEnv || len(out) == 0 || out[0].Var != HomeEnv {
				out = append(out, Unfollowed{Var: v, What: "state", Named: d, Uses: uses})
			}
		}
	}
	return out
}

// Note returns the one line a process says on stderr at start when its
// environment names other directories than the ones it uses
// (NotFollowed(os.Getenv)), or "" when it does not.
func Note() string {
	nf := NotFollowed(os.Getenv)
	if len(nf) == 0 {
		return ""
	}
	parts := make([]string, len(nf))
	for i, u := range nf {
		parts[i] = fmt.Sprintf("%s would name %s as mcpepoch's %s directory, mcpepoch uses %s", u.Var, u.Named, u.What, u.Uses)
	}
	return "environment not followed: " + strings.Join(parts, "; ") + fmt.Sprintf(
		" (under the home directory the account database gives uid %d: where the policy floors, the trust store and the copy of the audit head live must not come from the environment, which whoever launched this process chose)", os.Getuid())
}
