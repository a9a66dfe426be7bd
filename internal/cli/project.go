package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpepoch/mcpepoch/config"
)

// ResolveProject resolves the project root in dir, reads its mcpepoch.toml
// and applies the flags given over it (config.Config.Resolve). A bad flag
// value is a usage error.
func ResolveProject(dir string, f config.Flags) (*config.Settings, error) {
	root, cfg, err := LoadProject(dir)
	if err != nil {
		return nil, err
	}
	set, err := cfg.Resolve(root, f)
	var fe *config.FlagError
	if errors.As(err, &fe) {
		return nil, UsageError("%s", fe.Error())
	}
	return set, err
}

// LoadProject resolves the project root in dir and reads its mcpepoch.toml.
func LoadProject(dir string) (string, *config.Config, error) {
	root, err := ProjectRoot(dir)
	if err != nil {
		return "", nil, err
	}
	cfg, err := config.Load(root)
	return root, cfg, err
}

// ProjectRoot returns dir as an absolute path with symlinks resolved, so that
// hook and host, started from different spellings of one directory, agree.
func ProjectRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", &ExitError{Code: ExitUsage, Err: fmt.Errorf("project root: %w", err)}
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", UsageError("project root %s: not a directory", real)
	}
	return real, nil
}
