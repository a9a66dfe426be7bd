package build

import (
	"os"
	"testing"
	"time"
)

// testRacyWindow is the racy window the package's tests run with. The
// tests that need files outside the window wait racyWindow plus a margin
// (idAge, cacheTree); those that need files inside it write and walk at
// once. Half a second keeps those apart on a loaded machine, where 2 s
// would add 2.2 s to every test that lets files age.
const testRacyWindow = 500 * time.Millisecond

func TestMain(m *testing.M) {
	racyWindow = testRacyWindow
	os.Exit(m.Run())
}
