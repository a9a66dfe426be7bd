package checkup

import (
	"errors"
	"os"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/credsource"
)

// credentials reports each credential scope whose source cannot be read:
// a file that is missing, inside the project, not the user's or readable by
// others, a command whose program is not found. It neither reads a secret
// nor runs a command (credsource.Source.Check), so nothing it prints can
// hold one. An env source unset in doctor's own environment is a note, not
// a problem: the host reads the environment the MCP client launches it with,
// which may differ.
func (c *check) credentials() {
	set, err := credsource.New(c.root, c.cfg.Credentials, os.Environ())
	if err != nil {
		c.problem(config.FileName, err.Error(), "fix the scope's file in "+config.FileName)
		return
	}
	for _, scope := range set.Scopes() {
		src := set.Source(scope)
		err := src.Check()
		if err == nil || errors.Is(err, credsource.ErrNoSource) {
			continue
		}
		where := config.FileName + " [credentials." + scope + "]"
		switch src.Kind {
		case credsource.KindEnv:
			c.note("%v in doctor's environment: the host must be started with it, or it hands %s to no call", err, scope)
		case credsource.KindFile:
			c.problem(where, err.Error(), "put the secret in a file outside the project that you own, with mode 0600 (chmod 600 FILE), or fix credentials."+scope+".file")
		case credsource.KindCommand:
			c.problem(where, err.Error(), "install the program, or fix credentials."+scope+".command")
		}
	}
}
