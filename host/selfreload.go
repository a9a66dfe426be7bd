package host

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/childproc"
	"github.com/mcpepoch/mcpepoch/internal/selfcmd"
)

// SelfReloadError refuses a launch command that reloads code inside the
// host's child: the host cannot see such a reload, so new code would
// answer under the old epoch and the old grants, with no list_changed and
// no drift in status (seed: do not reload in-process during development).
type SelfReloadError struct {
	Command []string
	Tool    string // what reloads, such as "node --watch"
	Instead string // what to run instead
	// Via, when set, is the launch command that runs Command through a
	// wrapper (npm start, sh run.sh).
	Via []string
}

func (e *SelfReloadError) Error() string {
	if e.Via != nil {
		return fmt.Sprintf("launch command %q runs %q, which reloads code in-process (%s): the host cannot see the new code, which would answer under the old execution epoch and the old grants; %s, and let the build hook ("+selfcmd.Name()+" record) restart it under a new epoch; or set allow_self_reload = true in mcpepoch.toml",
			e.Via, e.Command, e.Tool, e.Instead)
	}
	return fmt.Sprintf("launch command %q reloads code in-process (%s): the host cannot see the new code, which would answer under the old execution epoch and the old grants; %s, and let the build hook ("+selfcmd.Name()+" record, from task --watch or make) restart it under a new epoch; or set allow_self_reload = true in mcpepoch.toml",
		e.Command, e.Tool, e.Instead)
}

// selfReloaders lists the tools that reload in-process: the word of the
// command that names the tool, and the arguments after it that make it
// reload (nil: the tool always does).
var selfReloaders = []struct {
	tool    string
	flags   []string // any of these, or a prefix with "="
	sub     string   // or this subcommand as the next word
	instead string
}{
	{"node", []string{"--watch", "--watch-path"}, "", ""},
	{"tsx", nil, "watch", "build with tsc and run node dist/server.js (or run tsx without watch)"},
	{"nodemon", nil, "", "run node dist/server.js instead of nodemon"},
	{"bun", []string{"--watch", "--hot"}, "", ""},
	{"deno", []string{"--watch"}, "", ""},
	{"uvicorn", []string{"--reload"}, "", ""},
	{"air", nil, "", "build with go build and run the binary instead of air"},
	{"watchexec", nil, "", "run the server itself instead of watchexec"},
}

// checkSelfReload returns a *SelfReloadError when command runs a tool
// that reloads in-process, directly, through a wrapper (npx, uv run …) or
// in a sh -c script; nil otherwise.
func checkSelfReload(command []string) error {
	words := command
	if len(command) >= 3 && slices.Contains([]string{"sh", "bash", "dash", "zsh"}, filepath.Base(command[0])) && command[1] == "-c" {
		words = append(strings.Fields(command[2]), command[3:]...)
	}
	for i, w := range words {
		base := strings.TrimSuffix(filepath.Base(w), ".exe")
		for _, r := range selfReloaders {
			if base != r.tool {
				continue
			}
			rest := words[i+1:]
			tool := ""
			switch {
			case r.flags == nil && r.sub == "":
				tool = r.tool
			case r.sub != "" && len(rest) > 0 && rest[0] == r.sub:
				tool = r.tool + " " + r.sub
			default:
				for _, a := range rest {
					for _, f := range r.flags {
						if a == f || strings.HasPrefix(a, f+"=") {
							tool = r.tool + " " + f
						}
					}
				}
			}
			if tool != "" {
				instead := r.instead
				if r.flags != nil {
					// The person's own command without the flag.
					instead = "drop " + strings.TrimPrefix(tool, r.tool+" ") + ": run " + shellWords(withoutFlags(words, i+1, r.flags))
				}
				return &SelfReloadError{Command: command, Tool: tool, Instead: instead}
			}
		}
	}
	return nil
}

// withoutFlags returns words with the reload flags after words[from:]
// taken out: "--watch", "--watch=x", and "--watch-path x" with its value.
func withoutFlags(words []string, from int, flags []string) []string {
	out := slices.Clone(words[:from])
	for i := from; i < len(words); i++ {
		a := words[i]
		if slices.Contains(flags, a) {
			if strings.HasSuffix(a, "-path") && i+1 < len(words) {
				i++ // --watch-path DIR
			}
			continue
		}
		if slices.ContainsFunc(flags, func(f string) bool { return strings.HasPrefix(a, f+"=") }) {
			continue
		}
		out = append(out, a)
	}
	return out
}

// shellWords joins words for a message, quoting a word with a space.
func shellWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = w
		if w == "" || strings.ContainsAny(w, " \t'\"") {
			q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// treeInterval is how often the host looks at a self-reloading child's
// process tree (allow_self_reload, Linux).
const treeInterval = 250 * time.Millisecond

// watchTree runs while child c is current, with allow_self_reload: when a
// process under it is replaced (replacedProcess), its code was reloaded,
// and the host treats that as an epoch change: it restarts the server under a new epoch, visibly (list_changed,
// grants revoked, the audit log), rather than let new code answer under
// the old one. Outside Linux there is no process tree to read: the host
// says so once and cannot see such reloads.
func (h *Host) watchTree(c *child) {
	prev, ok := childproc.Descendants(c.pid)
	stable, ended := map[int]string{}, map[string]time.Time{}
	if !ok {
		h.logf("epoch %s: allow_self_reload: this platform gives no view of the server's process tree; an in-process reload is not seen and keeps the epoch", c.epoch)
		return
	}
	t := time.NewTicker(treeInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		cur, _ := childproc.Descendants(c.pid)
		replaced := replacedProcess(stable, prev, cur, ended, time.Now())
		stable = map[int]string{} // seen at two looks in a row
		for p, comm := range cur {
			if prev[p] == comm {
				stable[p] = comm
			}
		}
		prev = cur
		if !replaced {
			continue
		}
		h.mu.Lock()
		current := h.child == c
		h.mu.Unlock()
		if !current {
			return
		}
		h.logf("epoch %s: a process under pid %d was replaced (an in-process reload): new code runs, so a new epoch begins", c.epoch, c.pid)
		if _, err := h.restart(h.ctx, "in-process reload under pid "+strconv.Itoa(c.pid), restartManual); err != nil {
			h.logf("restart after an in-process reload: %v", err)
		}
		return
	}
}

// reloadWindow is how long after a process under the server ended a new
// one of the same name counts as its replacement.
const reloadWindow = 5 * time.Second

// replacedProcess reports whether a process under the server was
// replaced since the last look: one seen at two looks in a row (stable)
// ended (noted in ended, by name, at now), and a process of the same name
// that the last look (prev) did not see by that name runs now (cur), within
// reloadWindow. That is what a reloader (node --watch, nodemon, uvicorn
// --reload) does to the process that runs the code. A short-lived helper
// (a git the server runs) is never stable, and one that ends without a
// successor of its name replaces nothing.
func replacedProcess(stable, prev, cur map[int]string, ended map[string]time.Time, now time.Time) bool {
	for p, comm := range stable {
		if _, alive := cur[p]; !alive {
			ended[comm] = now
		}
	}
	for q, comm := range cur {
		// A new process: a pid the last look did not see, or saw under
		// another name (forked by a shell then, it has exec'd since).
		if prev[q] != comm {
			if t, ok := ended[comm]; ok && now.Sub(t) < reloadWindow {
				return true
			}
		}
	}
	return false
}
