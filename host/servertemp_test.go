package host

import (
	"testing"

	"github.com/mcpepoch/mcpepoch/epoch"
)

// A credential relaunch starts a server under the epoch it had: its
// TMPDIR's name differs all the same, so the new server does not meet
// the old one's directory (which the old one's exit removes).
func TestTempNameUniquePerLaunch(t *testing.T) {
	ep := epoch.Epoch("01M97B9KJFMX00B5Y7BAP98Z2V")
	a, b := tempName(ep), tempName(ep)
	if a == b || !tempNamePattern.MatchString(a) || !tempNamePattern.MatchString(b) {
		t.Fatalf("two launches of epoch %s: TMPDIR names %q and %q; want two names of the pattern %s", ep, a, b, tempNamePattern)
	}
}
