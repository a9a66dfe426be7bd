//go:build !darwin

package layout

import "path/filepath"

// stateDefault is the state directory under home when XDG_STATE_HOME names
// none: the XDG Base Directory default, ~/.local/state.
func stateDefault(home string) string {
	return filepath.Join(home, ".local", "state", "mcpepoch")
}
