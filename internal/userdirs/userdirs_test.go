package userdirs

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// asProduct makes this test see a product build: the account database
// answers through lookup, asked anew.
func asProduct(t *testing.T, lookup func(string) (*user.User, error)) {
	t.Helper()
	t.Setenv(AsProductEnv, "1")
	old := lookupID
	lookupID = lookup
	forget := func() {
		account.Lock()
		account.done = false
		account.Unlock()
	}
	forget()
	oldGetent := getent
	getent = filepath.Join(t.TempDir(), "no-getent") // NSS has no answer either
	t.Cleanup(func() { lookupID, getent = old, oldGetent; forget() })
}

func homeIs(dir string) func(string) (*user.User, error) {
	return func(id string) (*user.User, error) { return &user.User{Uid: id, HomeDir: dir}, nil }
}

// TestTestBinaryFollowsEnv: a test binary takes the directories from its
// environment, by today's rules, so that tests never touch the user's.
func TestTestBinaryFollowsEnv(t *testing.T) {
	if !FollowsEnv() {
		t.Fatal("a test binary does not follow the environment")
	}
	x, s, h := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv(ConfigEnv, x)
	t.Setenv(StateEnv, s)
	t.Setenv(HomeEnv, h)
	if d, err := Config(); runtime.GOOS != "darwin" && (err != nil || d != filepath.Join(x, "mcpepoch")) {
		t.Errorf("Config = %q, %v; want %s", d, err, filepath.Join(x, "mcpepoch"))
	}
	if d, err := State(); err != nil || d != filepath.Join(s, "mcpepoch") {
		t.Errorf("State = %q, %v; want %s", d, err, filepath.Join(s, "mcpepoch"))
	}
	if d, err := Home(); err != nil || d != h {
		t.Errorf("Home = %q, %v; want %s", d, err, h)
	}
	if nf := NotFollowed(os.Getenv); nf != nil || Note() != "" {
		t.Errorf("a build that follows the environment names unfollowed variables: %v %q", nf, Note())
	}
}

// TestProductIgnoresEnv: a product build takes the home directory from
// the account database, whatever HOME, XDG_CONFIG_HOME and XDG_STATE_HOME
// say, and names the variables that would have moved a directory.
func TestProductIgnoresEnv(t *testing.T) {
	home := t.TempDir()
	agent := t.TempDir()
	t.Setenv(HomeEnv, filepath.Join(agent, "home"))
	t.Setenv(ConfigEnv, filepath.Join(agent, "config"))
	t.Setenv(StateEnv, filepath.Join(agent, "state"))
	asProduct(t, homeIs(home))
	if FollowsEnv() {
		t.Fatal("AsProduct: still follows the environment")
	}
	wantCfg, wantState := filepath.Join(home, ".config", "mcpepoch"), filepath.Join(home, ".local", "state", "mcpepoch")
	if runtime.GOOS == "darwin" {
		wantCfg = filepath.Join(home, "Library", "Application Support", "mcpepoch")
		wantState = filepath.Join(wantCfg, "state")
	}
	if d, err := Home(); err != nil || d != home {
		t.Errorf("Home = %q, %v; want %s", d, err, home)
	}
	if d, err := Config(); err != nil || d != wantCfg {
		t.Errorf("Config = %q, %v; want %s", d, err, wantCfg)
	}
	if d, err := ConfigFor(func(string) string { return "/elsewhere" }); err != nil || d != wantCfg {
		t.Errorf("ConfigFor(another env) = %q, %v; want %s", d, err, wantCfg)
	}
	if d, err := State(); err != nil || d != wantState {
		t.Errorf("State = %q, %v; want %s", d, err, wantState)
	}
	nf := NotFollowed(os.Getenv)
	var vars []string
	for _, u := range nf {
		vars = append(vars, u.Var+"="+u.Named+">"+u.Uses)
	}
	wantVars := []string{
		ConfigEnv + "=" + filepath.Join(agent, "config", "mcpepoch") + ">" + wantCfg,
		StateEnv + "=" + filepath.Join(agent, "state", "mcpepoch") + ">" + wantState,
	}
	if runtime.GOOS == "darwin" { // os.UserConfigDir follows HOME there
		wantVars[0] = HomeEnv + "=" + filepath.Join(agent, "home", "Library", "Application Support", "mcpepoch") + ">" + wantCfg
	}
	if strings.Join(vars, " ") != strings.Join(wantVars, " ") {
		t.Errorf("NotFollowed = %q, want %q", vars, wantVars)
	}
	n := Note()
	for _, want := range []string{"environment not followed", StateEnv, filepath.Join(agent, "state", "mcpepoch"), wantState, "account database", "uid " + strconv.Itoa(os.Getuid())} {
		if !strings.Contains(n, want) {
			t.Errorf("Note does not say %q: %s", want, n)
		}
	}
	if strings.Contains(n, "\n") {
		t.Errorf("Note is not one line: %q", n)
	}

	// Variables that name the directories used are not worth a word.
	t.Setenv(HomeEnv, home)
	t.Setenv(ConfigEnv, "")
	t.Setenv(StateEnv, "")
	if n := Note(); n != "" {
		t.Errorf("Note with HOME naming the account's home: %q, want none", n)
	}
	// HOME alone, elsewhere: one line for it, however many directories it
	// would move.
	t.Setenv(HomeEnv, agent)
	if nf := NotFollowed(os.Getenv); len(nf) != 1 || nf[0].Var != HomeEnv || nf[0].What != "config" {
		t.Errorf("NotFollowed with HOME elsewhere = %+v, want HOME once, for config", nf)
	}
}

// TestProductLookupFails: no entry in the account database, or a home
// there that is not absolute, leaves no directory at all, and the error
// says why; HOME does not stand in.
func TestProductLookupFails(t *testing.T) {
	t.Setenv(HomeEnv, t.TempDir())
	for _, c := range []struct {
		name   string
		lookup func(string) (*user.User, error)
		want   string
	}{
		{"no entry", func(id string) (*user.User, error) { return nil, user.UnknownUserIdError(0) }, "has no usable entry for uid"},
		{"other error", func(string) (*user.User, error) { return nil, errors.New("nss down") }, "nss down"},
		{"empty home", homeIs(""), "not an absolute path"},
		{"relative home", homeIs("home/me"), `"home/me", not an absolute path`},
	} {
		t.Run(c.name, func(t *testing.T) {
			asProduct(t, c.lookup)
			if d, err := Home(); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "never from $HOME") {
				t.Errorf("Home = %q, %v; want an error with %q", d, err, c.want)
			}
			if d, err := Config(); err == nil || !strings.HasPrefix(err.Error(), "no config directory: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Config = %q, %v; want an error with %q", d, err, c.want)
			}
			if d, err := State(); err == nil || !strings.HasPrefix(err.Error(), "no state directory: ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("State = %q, %v; want an error with %q", d, err, c.want)
			}
			if n := Note(); n != "" {
				t.Errorf("Note with no account home: %q", n)
			}
		})
	}
}

// TestProductNSSFallback: on Linux, a user Go's lookup does not find (a
// build without cgo reads /etc/passwd only; LDAP and SSSD users are in
// NSS) gets the home getent passwd gives, run with an empty environment:
// nothing the host's environment holds reaches what answers. An answer
// for another uid is no answer.
func TestProductNSSFallback(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the getent fallback is Linux's")
	}
	t.Setenv("MCPEPOCH_TEST_NSS", "/from-env")
	for _, c := range []struct {
		name, script, want string
	}{
		{"answers", `echo "u:x:$2:100:U:/home/nss$MCPEPOCH_TEST_NSS:/bin/sh"`, "/home/nss"},
		{"other uid", `echo "u:x:99999:100:U:/home/other:/bin/sh"`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			asProduct(t, func(string) (*user.User, error) { return nil, user.UnknownUserIdError(0) })
			getent = filepath.Join(t.TempDir(), "getent")
			if err := os.WriteFile(getent, []byte("#!/bin/sh\n"+c.script+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			d, err := Home()
			switch {
			case c.want == "" && err == nil:
				t.Errorf("Home = %q with getent answering for another uid; want an error", d)
			case c.want != "" && (err != nil || d != c.want):
				t.Errorf("Home = %q, %v; want %s (getent run with an empty environment)", d, err, c.want)
			}
		})
	}
}

// TestAccountHomeReal: this machine's account database answers for the
// real uid as os/user does.
func TestAccountHomeReal(t *testing.T) {
	u, err := user.LookupId(strconv.Itoa(os.Getuid()))
	if err != nil {
		t.Skipf("the account database has no entry for uid %d here: %v", os.Getuid(), err)
	}
	asProduct(t, user.LookupId)
	if d, err := Home(); err != nil || d != filepath.Clean(u.HomeDir) {
		t.Errorf("Home = %q, %v; want %s", d, err, u.HomeDir)
	}
}

// TestFromEnv: the directories a build that follows the environment
// finds on each platform, by os.UserConfigDir's rules and XDG_STATE_HOME,
// or which variable leaves it none.
func TestFromEnv(t *testing.T) {
	for _, c := range []struct {
		goos, xdg, home, want, err string
	}{
		{"linux", "/x", "/h", "/x/mcpepoch", ""},
		{"linux", "", "/h", "/h/.config/mcpepoch", ""},
		{"linux", "rel/x", "/h", "", "XDG_CONFIG_HOME is relative"},
		{"linux", "", "", "", "neither $XDG_CONFIG_HOME nor $HOME"},
		{"freebsd", "", "/h", "/h/.config/mcpepoch", ""},
		{"darwin", "/x", "/h", "/h/Library/Application Support/mcpepoch", ""},
		{"darwin", "/x", "", "", "$HOME is not defined"},
	} {
		env := map[string]string{ConfigEnv: c.xdg, HomeEnv: c.home}
		got, err := configFromEnv(c.goos, func(k string) string { return env[k] })
		if got != c.want || (c.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("configFromEnv(%s, XDG_CONFIG_HOME=%q HOME=%q) = %q, %v; want %q, error with %q", c.goos, c.xdg, c.home, got, err, c.want, c.err)
		}
	}
	for _, c := range []struct {
		goos, xdg, home, want string
	}{
		{"linux", "/s", "/h", "/s/mcpepoch"},
		{"linux", "rel", "/h", "/h/.local/state/mcpepoch"},
		{"darwin", "", "/h", "/h/Library/Application Support/mcpepoch/state"},
		{"linux", "rel", "rel", ""},
	} {
		env := map[string]string{StateEnv: c.xdg, HomeEnv: c.home}
		got, err := stateFromEnv(c.goos, func(k string) string { return env[k] })
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("stateFromEnv(%s, XDG_STATE_HOME=%q HOME=%q) = %q, %v; want %q", c.goos, c.xdg, c.home, got, err, c.want)
		}
	}
	// This process's environment gives what os.UserConfigDir says.
	d, err := os.UserConfigDir()
	got, gerr := configFromEnv(runtime.GOOS, os.Getenv)
	if (err == nil) != (gerr == nil) || err == nil && got != filepath.Join(d, "mcpepoch") {
		t.Errorf("configFromEnv here = %q, %v; os.UserConfigDir = %q, %v", got, gerr, d, err)
	}
}
