package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// Values of credentials.NAME.deliver.
const (
	// DeliverBroker: the server asks the host's per-epoch socket for the
	// secret while it handles a call a person approved (the default).
	DeliverBroker = "broker"
	// DeliverEnv: the server is launched with the secret in the variable
	// named by credentials.NAME.as, once a person approved the epoch.
	DeliverEnv = "env"
)

// Delivery returns c.Deliver, DeliverBroker when unset.
func (c Credential) Delivery() string {
	if c.Deliver == "" {
		return DeliverBroker
	}
	return c.Deliver
}

// HasSource reports whether one of Env, File and Command is set.
func (c Credential) HasSource() bool {
	return c.Env != "" || c.File != "" || len(c.Command) > 0
}

// FilePath returns File with a leading "~/" replaced by the home directory
// (os.UserHomeDir), cleaned; "" when File is unset.
func (c Credential) FilePath() (string, error) {
	f := c.File
	if f == "" {
		return "", nil
	}
	if rest, ok := strings.CutPrefix(f, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("%q starts with ~/ but the home directory is unknown: %w", f, err)
		}
		f = filepath.Join(home, rest)
	}
	if !filepath.IsAbs(f) {
		return "", fmt.Errorf("%q is not an absolute path (or one starting with ~/)", c.File)
	}
	return filepath.Clean(f), nil
}

// envNameRE is what a variable name in env and as must look like (POSIX
// portable names).
var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) }) // compiled on first use

// reservedEnvPrefix begins the variables mcpepoch sets in the server's
// environment itself.
const reservedEnvPrefix = "MCPEPOCH_"

// checkCredential checks the source and delivery keys of one scope of the
// project at root; it returns the key at fault (env, file, command,
// deliver, as) and why.
func checkCredential(root string, c Credential) (string, error) {
	set := 0
	for _, k := range []struct {
		key string
		on  bool
	}{{"env", c.Env != ""}, {"file", c.File != ""}, {"command", c.Command != nil}} {
		if !k.on {
			continue
		}
		if set++; set > 1 {
			return k.key, errors.New("env, file and command are alternatives: set one of them")
		}
	}
	if c.Env != "" {
		if err := checkEnvName(c.Env); err != nil {
			return "env", err
		}
	}
	if c.File != "" {
		if err := checkFile(root, c); err != nil {
			return "file", err
		}
	}
	if c.Command != nil && (len(c.Command) == 0 || c.Command[0] == "") {
		return "command", errors.New(`want the program and its arguments, e.g. ["pass", "show", "inventory/token"]`)
	}
	switch c.Deliver {
	case "", DeliverBroker:
		if c.As != "" {
			return "as", fmt.Errorf("as names the variable of deliver = %q; with deliver = %q the server asks the host instead", DeliverEnv, c.Delivery())
		}
	case DeliverEnv:
		if !c.HasSource() {
			return "deliver", errors.New(`deliver = "env" needs a source: set env, file or command`)
		}
		if c.PerCall {
			return "deliver", errors.New(`per_call = true needs deliver = "broker": a variable set at launch cannot be approved for each call`)
		}
		if c.As == "" {
			return "as", fmt.Errorf("deliver = %q needs as, the variable the server reads, e.g. as = \"API_TOKEN\"", DeliverEnv)
		}
		if err := checkEnvName(c.As); err != nil {
			return "as", err
		}
	default:
		return "deliver", fmt.Errorf("%q is not one of %s, %s", c.Deliver, DeliverBroker, DeliverEnv)
	}
	return "", nil
}

func checkEnvName(name string) error {
	if !envNameRE().MatchString(name) {
		return fmt.Errorf("%q is not a variable name (letters, digits and _, not starting with a digit)", name)
	}
	if strings.HasPrefix(strings.ToUpper(name), reservedEnvPrefix) {
		return fmt.Errorf("%q: variables starting with %s are mcpepoch's own", name, reservedEnvPrefix)
	}
	return nil
}

// checkFile checks that the file source is an absolute path outside the
// project, as written; symbolic links are resolved when it is read
// (package credsource), since the file may not exist yet.
func checkFile(root string, c Credential) error {
	f, err := c.FilePath()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if inside(abs, f) {
		return fmt.Errorf("%s is inside the project: keep secrets outside it, where no build, commit or server reads them", f)
	}
	return nil
}

// inside reports whether path is dir or lies under it (lexically).
func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Inside reports whether path is dir or lies under it, comparing cleaned
// paths as written (resolve symbolic links first to compare real places).
func Inside(dir, path string) bool { return inside(filepath.Clean(dir), filepath.Clean(path)) }
