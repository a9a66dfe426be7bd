package checkup

import (
	"bytes"
	"context"
	"debug/elf"
	"os/exec"
	"regexp"
	"strings"
	"sync"
)

// dynamicELF reports whether path is an ELF executable with a program
// interpreter (PT_INTERP): a dynamically linked one, whose loader honours
// LD_PRELOAD. Anything else, or a file that cannot be read, is not.
func dynamicELF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

// incomplete runs `MCPEPOCH template gitignore` (a command that reads and
// writes nothing) through the mcpepoch at path, so that what every command
// of that install meets (a file that is no program for this machine, a
// truncated download) decides. It returns "" when that works, else the
// first line the failure printed. Results are kept per path for one check.
func (c *check) incomplete(path string) string {
	if c.installs == nil {
		c.installs = map[string]string{}
	}
	if msg, ok := c.installs[path]; ok {
		return msg
	}
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "template", "gitignore")
	cmd.Stderr = &stderr
	msg := ""
	if err := cmd.Run(); err != nil {
		msg, _, _ = strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		msg = strings.TrimPrefix(msg, "mcpepoch: error: ")
		if msg == "" {
			msg = err.Error()
		}
	}
	c.installs[path] = msg
	return msg
}

// installFix says how to repair the install path belongs to: the npm
// tarballs when it is one of theirs, else go install.
func installFix(path string) string {
	if strings.Contains(path, "/node_modules/") {
		return "reinstall the npm tarballs (npm i -D DIR/mcpepoch-V.tgz DIR/mcpepoch-PLATFORM-V.tgz, which bash scripts/npm-pack.sh DIR builds in a clone)"
	}
	return "install it again (go install github.com/mcpepoch/mcpepoch/cmd/mcpepoch@latest, or go install ./cmd/mcpepoch in a clone)"
}

// revisionOf finds the revision in a version line ("… revision 036290d89006 …").
var revisionOf = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`revision ([0-9a-f]{12})[,)]`)
})

// sameRevision reports whether two version lines name the same clean VCS
// revision: two installs of one revision (go install and npm's, whose
// versions and stamps differ) record builds alike.
func sameRevision(a, b string) bool {
	ma, mb := revisionOf().FindStringSubmatch(a), revisionOf().FindStringSubmatch(b)
	return ma != nil && mb != nil && ma[1] == mb[1]
}
