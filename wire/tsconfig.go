package wire

import (
	"regexp"
	"strings"
	"sync"

	"github.com/mcpepoch/mcpepoch/project"
)

var compilerOptions = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`"compilerOptions"\s*:\s*\{`) }) // compiled on first use

// editTSConfig sets compilerOptions().noEmitOnError in tsconfig.json, so
// that a build that fails type checking leaves the last good output in
// place for a later restart to run. The text is edited (tsconfig.json may
// hold comments); a file that sets it, to either value, is left alone.
func editTSConfig(old []byte, tc *project.TSConfig) []byte {
	s := string(old)
	if tc == nil || tc.NoEmit || strings.Contains(s, `"noEmitOnError"`) {
		return old
	}
	insert := func(at int, member string) []byte {
		rest := strings.TrimLeft(s[at:], " \t\r\n")
		sep := ","
		if strings.HasPrefix(rest, "}") {
			sep = ""
		}
		line, _, _ := strings.Cut(s[at:], "\n")
		if strings.TrimSpace(line) != "" {
			return []byte(s[:at] + member + sep + " " + strings.TrimLeft(s[at:], " \t"))
		}
		next, _, _ := strings.Cut(strings.TrimPrefix(s[at:], line+"\n"), "\n")
		return []byte(s[:at] + "\n" + indentOf(next) + member + sep + s[at:])
	}
	if loc := compilerOptions().FindStringIndex(s); loc != nil {
		return insert(loc[1], `"noEmitOnError": true`)
	}
	if i := strings.IndexByte(s, '{'); i >= 0 {
		return insert(i+1, `"compilerOptions": {"noEmitOnError": true}`)
	}
	return old
}
