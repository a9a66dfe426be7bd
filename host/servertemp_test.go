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
	if a == b || !isTempName(a) || !isTempName(b) {
		t.Fatalf("two launches of epoch %s: TMPDIR names %q and %q; want two names of serverTemp's form", ep, a, b)
	}
	for _, name := range []string{"", "-1", ".lock", "0123456789", "0123456789-", "0123456789-x", "012345678i-1", "ABCDEFGHJK-1", "012345678-1", "0123456789-1-2"} {
		if isTempName(name) {
			t.Errorf("isTempName(%q) = true: a sweep would take it for a TMPDIR of a host", name)
		}
	}
}
