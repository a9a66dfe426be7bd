package layout

import "path/filepath"

// stateDefault is the state directory under home when XDG_STATE_HOME names
// none: macOS keeps an application's own files in
// ~/Library/Application Support, where mcpepoch's config directory (the
// trust store, os.UserConfigDir) is too; its state is a directory of its
// own beside that.
func stateDefault(home string) string {
	return filepath.Join(home, "Library", "Application Support", "mcpepoch", "state")
}
