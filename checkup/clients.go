package checkup

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/jsonc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
	"github.com/mcpepoch/mcpepoch/internal/userdirs"
	"github.com/mcpepoch/mcpepoch/wire"
)

// server is one entry of a client config's servers.
type server struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// clients checks every client config there is for this project: each
// entry that runs this server must go through mcpepoch host, and name
// mcpepoch by an absolute path that exists (clients started from a
// desktop do not search the shell's PATH).
func (c *check) clients(userConfigDir string) {
	for _, cl := range wire.Clients {
		path := cl.ConfigPath(userConfigDir)
		if path == "" {
			continue
		}
		perUser := filepath.IsAbs(path)
		if !perUser {
			path = filepath.Join(c.root, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var doc map[string]json.RawMessage
		if err := json.Unmarshal(jsonc.Strip(b), &doc); err != nil {
			c.problem(c.rel(path), "not JSON ("+err.Error()+"): the client cannot read it", "fix the syntax, or move it aside and run "+selfcmd.Name()+" init")
			continue
		}
		var servers map[string]server
		if raw, ok := doc[cl.ServersKey()]; ok {
			if err := json.Unmarshal(raw, &servers); err != nil {
				c.problem(c.rel(path), cl.ServersKey()+": "+err.Error(), "fix the entry by hand")
				continue
			}
		}
		names := make([]string, 0, len(servers))
		for n := range servers {
			names = append(names, n)
		}
		slices.Sort(names)
		hosted := ""
		for _, n := range names {
			// An entry that runs mcpepoch host for the project (named,
			// or in the project's own config without --dir), however it
			// finds mcpepoch (npx too): init leaves a direct entry
			// beside it.
			s := servers[n]
			words := append([]string{s.Command}, s.Args...)
			if hosted == "" && launchesHost(s) && (c.names(words) || (!perUser && !slices.Contains(s.Args, "--dir"))) {
				hosted = n
			}
		}
		for _, n := range names {
			c.server(cl, c.rel(path), n, servers[n], perUser, hosted)
		}
	}
}

// server checks the entry name of file; hosted is the entry of the same
// file that serves the project through mcpepoch host, "" for none.
func (c *check) server(cl wire.Client, file, name string, s server, perUser bool, hosted string) {
	where := file + ": server " + name
	words := append([]string{s.Command}, s.Args...)
	viaHost := strings.Contains(filepath.Base(s.Command), "mcpepoch")
	npx := viaNPX(s)
	ours := c.names(words)
	if dir, ok := hostDir(s); ok {
		c.hostDir(where, dir, perUser)
	}
	if perUser && !ours {
		return // another project's server, or another server
	}
	switch {
	case npx:
		c.problem(where, "launches mcpepoch through "+filepath.Base(s.Command)+": a package lookup at every start, and a PATH a desktop client may not have",
			"run "+selfcmd.Name()+" init, which points it at node_modules/.bin/mcpepoch by absolute path")
	case viaHost && !filepath.IsAbs(s.Command):
		c.problem(where, fmt.Sprintf("launches mcpepoch by name (%q): desktop clients do not search your shell's PATH", s.Command),
			"give the absolute path ("+selfcmd.Name()+" init writes it)")
	case viaHost && !exists(s.Command):
		c.problem(where, s.Command+" does not exist", "run "+selfcmd.Name()+" init again from the mcpepoch you use")
	case viaHost && c.incomplete(s.Command) != "":
		c.problem(where, "launches "+s.Command+", an incomplete install ("+c.incomplete(s.Command)+"): mcpepoch host exits before any MCP message",
			installFix(s.Command)+"; or run "+selfcmd.Name()+" init again from a complete install")
	case viaHost && perUser && !slices.Contains(s.Args, "--dir"):
		c.problem(where, "runs mcpepoch host without --dir: "+string(cl)+" starts servers outside the project", "add \"--dir\", \""+c.root+"\" after \"host\"")
	case !viaHost && ours && hosted != "":
		// init rewrites a direct entry only when no other entry serves
		// the project: two would start two hosts.
		c.problem(where, "launches the server directly, beside the entry "+hosted+", which serves the project through mcpepoch host: the client starts both",
			"delete the entry "+name+" from "+file+" ("+selfcmd.Name()+" init leaves it: it rewrites a direct entry only when no other serves the project)")
	case !viaHost && ours:
		c.problem(where, "launches the server directly, not through mcpepoch host: rebuilds reach the client as a dead server",
			"run "+selfcmd.Name()+" init, which rewrites the entry to launch mcpepoch host")
	}
	if viaHost || npx {
		c.configDir(where, s, !perUser)
	}
	if viaHost && filepath.IsAbs(s.Command) && dynamicELF(s.Command) && !c.dynamicNoted[s.Command] {
		if c.dynamicNoted == nil {
			c.dynamicNoted = map[string]bool{}
		}
		c.dynamicNoted[s.Command] = true
		c.note("%s is dynamically linked: the dynamic loader runs what LD_PRELOAD names in the host's environment, which a client config in the project sets, before mcpepoch's own code; CGO_ENABLED=0 go install ./cmd/mcpepoch builds a static one", s.Command)
	}
}

// configDir reports an entry whose env would leave its host no usable
// config directory (userdirs.ConfigFor with the entry's env laid over
// doctor's own, the client's taken to be doctor's), in a build that
// follows the environment: that host finds no policy floor, trust store or
// acceptance of the person's and holds the strictest policy, as for a
// floor that went missing (docs/policy-floor.md). A product build takes
// the directory from the account database whatever the entry sets
// (ownDirs reports a database with no usable home): an entry that sets HOME,
// XDG_CONFIG_HOME or XDG_STATE_HOME to name another directory gets a
// note that it moves none of them. A build that follows the environment
// (a test build, userdirs.FollowsEnv) reports such an entry in the
// project's own files (inProject), which an agent that writes the project
// can edit, as a problem.
func (c *check) configDir(where string, s server, inProject bool) {
	getenv := func(k string) string {
		if v, ok := s.Env[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	if _, err := userdirs.ConfigFor(getenv); err != nil {
		if userdirs.FollowsEnv() {
			c.problem(where, "its env leaves mcpepoch host no usable config directory ("+err.Error()+
				"): the host finds no policy floor or trust store of yours and holds the strictest policy (presence only, nothing exempt)",
				"remove XDG_CONFIG_HOME and HOME from the entry's env, or set XDG_CONFIG_HOME to an absolute path")
		}
		return // not the entry's doing: ownDirs says it once
	}
	var set []string
	for _, k := range []string{userdirs.HomeEnv, userdirs.ConfigEnv, userdirs.StateEnv} {
		if _, ok := s.Env[k]; ok {
			set = append(set, k)
		}
	}
	if len(set) == 0 {
		return
	}
	if userdirs.FollowsEnv() {
		var moved []string
		for _, k := range set {
			if s.Env[k] != os.Getenv(k) {
				moved = append(moved, k)
			}
		}
		if inProject && len(moved) > 0 {
			c.problem(where, "its env sets "+strings.Join(moved, ", ")+", which choose where this test build of mcpepoch host keeps the policy floor, the trust store and the copy of the audit head: "+
				"a file of the project, which an agent that writes the project can edit, then decides where the host's guards against that agent live",
				"remove "+strings.Join(moved, ", ")+" from the entry's env")
		}
		return
	}
	// What the entry's variables would name, were they followed: the
	// ones doctor's own environment names are not the entry's doing.
	var named []string
	for _, u := range userdirs.NotFollowed(getenv) {
		if slices.Contains(set, u.Var) {
			named = append(named, fmt.Sprintf("%s would name %s", u.Var, u.Named))
		}
	}
	if len(named) > 0 {
		cfg, _ := userdirs.Config()
		st, _ := userdirs.State()
		c.note("%s: its env sets %s, which moves none of mcpepoch's own directories (%s): mcpepoch host keeps the policy floor and the trust store in %s and the copy of the audit head under %s, "+
			"under the home directory the account database names, whatever a client config sets", where, strings.Join(set, ", "), strings.Join(named, "; "), cfg, st)
	}
}

// hostDir checks the --dir dir of an entry that runs mcpepoch host: the
// host takes it as the project root as it is (it does not look in the
// parents), and exits with status 2 before any MCP message when it is not
// a directory. In a project's own config it must be this project's root:
// a copied or moved config serves another project, or none. In a per-user
// config, which lists the servers of many projects, only a directory that
// is gone is a problem (a relative one depends on where the client starts
// servers, and is left alone). A directory inside the project with an
// mcpepoch.toml of its own is a project of its own, as a monorepo's config
// serves its packages.
func (c *check) hostDir(where, dir string, perUser bool) {
	if perUser && !filepath.IsAbs(dir) {
		return
	}
	abs := dir
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(c.root, abs)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err == nil {
		if fi, serr := os.Stat(real); serr != nil || !fi.IsDir() {
			err = errors.New("not a directory")
		}
	}
	switch {
	case err != nil && perUser:
		c.problem(where, fmt.Sprintf("runs mcpepoch host --dir %s, which is not a directory: the host exits at once (status 2) and the client shows a failed server", dir),
			"point --dir at the project's root (\"--dir\", \""+c.root+"\" for this one), or delete the entry if its project is gone")
	case err != nil:
		c.problem(where, fmt.Sprintf("runs mcpepoch host --dir %s, which is not a directory: the host exits at once (status 2) and the client shows a failed server", dir),
			"change it to \"--dir\", \""+c.root+"\" (this project's root)")
	case !perUser && real != c.root && !c.subproject(real):
		c.problem(where, fmt.Sprintf("runs mcpepoch host --dir %s, not this project's root %s: the client runs that directory's server, not this one", dir, c.root),
			"change it to \"--dir\", \""+c.root+"\"")
	}
}

// subproject reports whether dir lies inside this project and has an
// mcpepoch.toml of its own: a monorepo's config that serves its packages.
func (c *check) subproject(dir string) bool {
	r, err := filepath.Rel(c.root, dir)
	if err != nil || r == "." || strings.HasPrefix(r, "..") {
		return false
	}
	_, err = os.Lstat(filepath.Join(dir, config.FileName))
	return err == nil
}

// hostDir returns the value of --dir (or -dir, or --dir=…) among the flags
// of an entry that runs mcpepoch host: the words after "host" up to "--".
func hostDir(s server) (string, bool) {
	if !launchesHost(s) {
		return "", false
	}
	i := slices.Index(s.Args, "host")
	if i < 0 {
		return "", false
	}
	for j := i + 1; j < len(s.Args) && s.Args[j] != "--"; j++ {
		a := s.Args[j]
		switch {
		case (a == "--dir" || a == "-dir") && j+1 < len(s.Args):
			return s.Args[j+1], true
		case strings.HasPrefix(a, "--dir="), strings.HasPrefix(a, "-dir="):
			return a[strings.Index(a, "=")+1:], true
		}
	}
	return "", false
}

// viaNPX reports whether s runs mcpepoch through a package runner (npx,
// bunx, pnpx).
func viaNPX(s server) bool {
	return slices.Contains([]string{"npx", "bunx", "pnpx"}, filepath.Base(s.Command)) && len(s.Args) > 0 && strings.HasPrefix(s.Args[0], "mcpepoch")
}

// launchesHost reports whether s runs mcpepoch, by path or through a
// package runner.
func launchesHost(s server) bool {
	return strings.Contains(filepath.Base(s.Command), "mcpepoch") || viaNPX(s)
}

// names reports whether a command line runs this project's server: the
// launch command itself, its entry by name, or mcpepoch host for the root.
func (c *check) names(words []string) bool {
	if len(c.pl.Command) > 0 && slices.Equal(words, c.pl.Command) {
		return true
	}
	for _, w := range words {
		if w == c.root || filepath.Clean(w) == c.root {
			return true
		}
		if c.pl.Entry != "" && (w == c.pl.Entry || w == "./"+c.pl.Entry || w == filepath.Join(c.root, c.pl.Entry)) {
			return true
		}
	}
	return false
}

// ownDirs reports, in a product build, a user the account database gives
// no usable home directory (every host then holds the strictest policy,
// and keeps the audit head in the project only), and notes the variables
// of doctor's own environment that name other directories than mcpepoch
// uses: an older mcpepoch followed them, and what it kept there is not
// read any more.
func (c *check) ownDirs() {
	if userdirs.FollowsEnv() {
		return
	}
	if _, err := userdirs.Config(); err != nil {
		c.problem("config directory", "mcpepoch has no config directory ("+err.Error()+
			"): every host finds no policy floor or trust store of yours and holds the strictest policy (presence only, nothing exempt), and keeps the copy of the audit head nowhere outside the project",
			"give your user an entry with an absolute home directory in the account database")
		return
	}
	for _, u := range userdirs.NotFollowed(os.Getenv) {
		c.note("%s would name %s as mcpepoch's %s directory; mcpepoch does not follow it and uses %s, under the home directory the account database names "+
			"(an older mcpepoch followed %s: if %s holds files of yours, move them to %s)", u.Var, u.Named, u.What, u.Uses, u.Var, u.Named, u.Uses)
	}
}
