package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// configDigest returns the SHA-256 (hex) of mcpepoch.toml in dir, "absent"
// when there is none, or "unreadable" when it cannot be read.
func configDigest(dir string) string {
	b, err := safefile.ReadFile(filepath.Join(dir, config.FileName), config.MaxSize)
	switch {
	case err == nil:
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:])
	case errors.Is(err, fs.ErrNotExist):
		return "absent"
	}
	return "unreadable"
}

// configChange says, in one line, that mcpepoch.toml changed since the
// host started, or returns "". The host does not apply a changed file:
// grants policy, credentials, restart mode and command were read once, for
// this connection, and a file changed halfway (a grants policy loosened by
// whoever can write the project) must not take effect unseen. A new
// connection reads it: the line says so plainly. Shown by mcpepoch status
// and logged on each build signal while it holds.
func (h *Host) configChange() string {
	if h.opts.Dir == "" || configDigest(h.opts.Dir) == h.configAtStart {
		return ""
	}
	return config.FileName + " changed since this host started; it is not re-read while the client stays connected: " +
		"reconnect the client (restart its MCP server) to apply it"
}
