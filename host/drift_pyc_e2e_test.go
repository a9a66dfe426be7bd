package host_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
)

// pycPlant is a Python program that writes, for the source file argv[1],
// the .pyc Python looks for (in a __pycache__ it makes), compiled from
// argv[2], with a header matching the source's mtime and size.
const pycPlant = `import importlib.util, marshal, os, sys
path, src = sys.argv[1], sys.argv[2]
st = os.stat(path)
out = importlib.util.cache_from_source(path)
os.makedirs(os.path.dirname(out), exist_ok=True)
with open(out, "wb") as f:
    f.write(importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + (int(st.st_mtime) & 0xffffffff).to_bytes(4, "little") + (st.st_size & 0xffffffff).to_bytes(4, "little") + marshal.dumps(compile(src, path, "exec")))
`

// Bytecode written while the epoch runs, into a __pycache__ that did not
// exist, is code the next import loads: the host's tree watcher sees it
// as it sees a saved source, audits identity_drift and refuses the
// grant-covered call before it reaches the bytecode.
func TestBytecodeSavedWhileEpochRunsRevokesItsGrants(t *testing.T) {
	t.Parallel()
	p, c := newLazyProject(t)
	if _, err := os.Stat(p.path("app/__pycache__")); err == nil {
		t.Fatal("app/__pycache__ exists before the planting")
	}

	evil := "import os\nopen(os.path.join(os.path.dirname(__file__), '..', 'evil.ran'), 'w').close()\ndef run():\n    return 'unapproved code'\n"
	if out, err := exec.Command("python3", "-B", "-c", pycPlant, p.path("app/impl.py"), evil).CombinedOutput(); err != nil {
		t.Fatalf("planting bytecode: %v\n%s", err, out)
	}
	drift := p.waitRecords("identity_drift record", func(rs []audit.Record) bool {
		return len(recordsOf(rs, audit.TypeIdentityDrift)) == 1
	})
	if d := recordsOf(drift, audit.TypeIdentityDrift)[0]; !strings.Contains(fieldJSON(d, "changed"), `"**/__pycache__"`) {
		t.Errorf("identity_drift record does not name the bytecode: %+v", d.Fields)
	}
	wantError(t, c.callWait("read", nil), host.CodeAuthorizationStale, "authorization_stale: identity_drift:")
	if _, err := os.Stat(p.path("evil.ran")); err == nil {
		t.Fatal("the bytecode planted after the approval ran under it")
	}
}
