package attack_test

import (
	"os"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// minParallel is how many scenarios run at once, at least, when go test
// is given no -parallel flag: each mostly waits on the processes it
// starts (a host, its server, bwrap, the mcpepoch commands).
const minParallel = 8

// TestMain runs the agent's own program when this binary is started as
// it (see tool_test.go); otherwise it gives the tests a session of their
// own (the person checks take the test process, which is every host's MCP
// client, for their launching side) and a config and state directory of
// their own, outside every project and every agent's temp directory, as
// a person's ~/.config and ~/.local/state are.
func TestMain(m *testing.M) {
	if os.Getenv(toolEnv) == "1" {
		os.Exit(runTool(os.Args[1:]))
	}
	testenv.OwnSession()
	testenv.WidenParallel(minParallel)
	remove := testenv.UserConfig()
	code := m.Run()
	remove()
	os.Exit(code)
}
