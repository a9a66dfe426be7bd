package approval

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/proctree"
)

// The MCP client that launched the host, found past wrappers.
//
// A client often launches the host through a program that starts it and
// waits for it: the npm launcher, npx, a shell's -c. The host's parent is
// then that wrapper, while the agent's commands descend from the client
// above it. clientChain walks up from the host's parent past every
// wrapper and stops at the first process that is not one, the client;
// an approval descending from any process of that chain proves only
// same-user. The walk never goes above the client, so a terminal emulator
// or login shell that the client and a person's own terminal share still
// lets that person approve from another tab.
//
// A wrapper is, by its executable (or its argv[0]) and arguments:
//   - a shell (sh, bash, dash, zsh, ksh, mksh, ash) given -c, alone or in
//     a cluster of short options (-ec, -lc);
//   - env, timeout, nice, nohup, setsid, stdbuf or time;
//   - node (or nodejs) running the npm launcher, a script named mcpepoch
//     or mcpepoch.js (node_modules/.bin/mcpepoch, bin/mcpepoch.js);
//   - npx, or npm exec / npm x: node running npx-cli.js, npm-cli.js exec,
//     or a process titled "npx …" or "npm exec …" (npm sets its title).
//
// Any other process, or one that cannot be examined, is the client.
//
// The npm launcher also names its own parent in ClientPIDEnv. An agent
// controls its own environment, so that hint only ever adds to the chain,
// and only when it names an ancestor of the host: it never replaces the
// walk.

// ClientPIDEnv is the environment variable in which the npm launcher
// names the process that started it (a decimal pid).
const ClientPIDEnv = "MCPEPOCH_CLIENT_PID"

// ancestor is one process of the client chain and what it is.
type ancestor struct {
	pid  int
	what string // "wrapper: sh -c" …, or "" for the client
}

// Launch is what launched a host: the chain of its parent and every
// wrapper above it up to and including the MCP client (see above), which
// names the client, and every ancestor of the host within the host's
// session, up to and including the session leader, which decides. The
// agent's commands descend from the client, and any program may stand
// between the client and the host, so no list of wrappers can say where
// the client is; the session can: a person's own terminal is a session
// of its own. A host that cannot walk its session (no ancestor in it: it
// leads a session of its own, or its parent is gone; or a process that
// cannot be examined) cannot identify its client, and then nothing proves
// a person at a terminal or in the client.
type Launch struct {
	chain   []ancestor
	session []int
	unknown string
}

// LaunchOf returns the launch chain of a host whose parent is parent:
// parent and every wrapper above it up to and including the client, then,
// when hint (ClientPIDEnv's value) names an ancestor of the host not
// already in the chain, the chain from hint. It reads the process table.
// The session walk starts at parent and ends at the host's session leader.
func LaunchOf(parent int, hint string) Launch {
	l := Launch{chain: clientChain(parent, hint)}
	l.session, l.unknown = sessionAncestors(os.Getpid(), parent)
	return l
}

// sessionAncestors returns parent and its ancestors, up to and including
// the session leader of self, while they are in self's session, or why
// they cannot be known.
func sessionAncestors(self, parent int) ([]int, string) {
	sid, err := proctree.Session(self)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("its session cannot be read: %v", err)
	case sid == self:
		return nil, "it leads a session of its own, so no process that started it is in its session"
	case parent <= 1:
		return nil, "its parent has gone"
	}
	var out []int
	for pid, n := parent, 0; ; n++ {
		if n >= proctree.MaxAncestry {
			return nil, fmt.Sprintf("it has more than %d ancestors", proctree.MaxAncestry)
		}
		s, err := proctree.Session(pid)
		if err != nil {
			return nil, fmt.Sprintf("its ancestor (pid %d) cannot be examined: %v", pid, err)
		}
		if s != sid {
			return out, "" // left the session: its leader has gone
		}
		out = append(out, pid)
		if pid == sid {
			return out, ""
		}
		if pid, _, err = proctree.Parent(pid); err != nil {
			return nil, fmt.Sprintf("its ancestor (pid %d) cannot be examined: %v", out[len(out)-1], err)
		}
		if pid <= 1 {
			return out, ""
		}
	}
}

// inSession says whether pid is an ancestor of the host within its session.
func (l Launch) inSession(pid int) bool {
	for _, p := range l.session {
		if p == pid {
			return true
		}
	}
	return false
}

func clientChain(parent int, hint string) []ancestor {
	chain := walkWrappers(parent)
	pid, err := strconv.Atoi(strings.TrimSpace(hint))
	if hint == "" || err != nil || pid <= 1 || inChain(chain, pid) || !proctree.IsAncestor(parent, pid) {
		return chain
	}
	return append(chain, walkWrappers(pid)...)
}

// walkWrappers returns pid and, while it is a wrapper, its parents, up to
// the first process that is not one.
func walkWrappers(pid int) []ancestor {
	var chain []ancestor
	for n := 0; pid > 1 && n < proctree.MaxAncestry; n++ {
		exe, argv, err := proctree.Args(pid)
		what, ok := wrapper(exe, argv)
		if err != nil || !ok {
			return append(chain, ancestor{pid: pid})
		}
		chain = append(chain, ancestor{pid: pid, what: what})
		if pid, _, err = proctree.Parent(pid); err != nil {
			return chain
		}
	}
	return chain
}

func inChain(chain []ancestor, pid int) bool {
	for _, a := range chain {
		if a.pid == pid {
			return true
		}
	}
	return false
}

var (
	shells   = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true}
	execWait = map[string]bool{"env": true, "timeout": true, "nice": true, "nohup": true, "setsid": true, "stdbuf": true, "time": true}
)

// wrapper says whether a process running exe with argv is a wrapper (see
// above), and which.
func wrapper(exe string, argv []string) (string, bool) {
	if len(argv) == 0 {
		return "", false
	}
	name := strings.TrimPrefix(filepath.Base(argv[0]), "-")
	bin := filepath.Base(exe)
	switch {
	case shells[bin] || shells[name]:
		for _, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
				break
			}
			if !strings.HasPrefix(a, "--") && strings.ContainsRune(a, 'c') {
				return "wrapper: " + name + " -c", true
			}
		}
	case execWait[bin] || execWait[name]:
		return "wrapper: " + name, true
	case bin == "node" || bin == "nodejs" || name == "node" || name == "nodejs" || name == "npm" || name == "npx":
		return nodeWrapper(argv)
	}
	return "", false
}

// nodeWrapper classifies a node process: the npm launcher, npx or npm
// exec. A title set by npm replaces argv by one string with spaces.
func nodeWrapper(argv []string) (string, bool) {
	if len(argv) == 1 {
		argv = strings.Fields(argv[0])
	}
	script, rest := "", []string(nil)
	if n := filepath.Base(argv[0]); n == "npm" || n == "npx" {
		script, rest = n, argv[1:]
	} else {
		for i, a := range argv[1:] {
			if !strings.HasPrefix(a, "-") {
				script, rest = filepath.Base(a), argv[i+2:]
				break
			}
		}
	}
	switch script {
	case "mcpepoch", "mcpepoch.js":
		return "wrapper: the npm launcher", true
	case "npx", "npx-cli.js":
		return "wrapper: npx", true
	case "npm", "npm-cli.js":
		if len(rest) > 0 && (rest[0] == "exec" || rest[0] == "x") {
			return "wrapper: npm exec", true
		}
	}
	return "", false
}

// describe names a chain member for a refusal.
func (a ancestor) describe() string {
	if a.what == "" {
		return fmt.Sprintf("the MCP client that launched this host (pid %d)", a.pid)
	}
	return fmt.Sprintf("the MCP client that launched this host (pid %d, %s)", a.pid, a.what)
}

// LaunchHint is the npm launcher's ClientPIDEnv in this process's
// environment.
func LaunchHint() string { return os.Getenv(ClientPIDEnv) }

// member returns the member of the chain that pid is, or nil.
func (l Launch) member(pid int) *ancestor {
	for i := range l.chain {
		if l.chain[i].pid == pid {
			return &l.chain[i]
		}
	}
	return nil
}
