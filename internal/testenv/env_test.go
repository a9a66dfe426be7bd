package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestUserConfigKeepsGoSettings: after UserConfig the go command still
// reads the user's settings file, not one in the new config directory, so
// every test process builds the shared binaries with the same flags.
func TestUserConfigKeepsGoSettings(t *testing.T) {
	goenv := func() string {
		out, err := exec.Command("go", "env", "GOENV").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	before := goenv()
	t.Setenv("GOENV", "")
	os.Unsetenv("GOENV")
	t.Setenv("XDG_CONFIG_HOME", os.Getenv("XDG_CONFIG_HOME"))
	remove := UserConfig()
	defer remove()
	if after := goenv(); after != before {
		t.Errorf("go env GOENV after UserConfig = %s, want the user's %s", after, before)
	}
}
