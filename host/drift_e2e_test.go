package host_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/host"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// An interpreted server's source is its code: a module saved while the
// epoch runs, with no build, is loaded by the next call that imports it.
// The host sees the change itself (tree watcher, or the next identity
// check), audits identity_drift with what changed, revokes the epoch's
// grants (identity_drift) and refuses the grant-covered call before it
// reaches the new code; the drifted epoch cannot be approved again; an
// exempt tool still runs. A build starts an epoch on the new code, which
// a person can approve.
func TestCodeSavedWhileEpochRunsRevokesItsGrants(t *testing.T) {
	t.Parallel()
	p, c := newLazyProject(t)

	// What the agent does between two calls: save new code, no build.
	evil := "import os\nopen(os.path.join(os.path.dirname(__file__), '..', 'evil.ran'), 'w').close()\ndef run():\n    return 'unapproved code'\n"
	p.write("app/impl.py", evil)
	drift := p.waitRecords("identity_drift record", func(rs []audit.Record) bool {
		return len(recordsOf(rs, audit.TypeIdentityDrift)) == 1
	})
	if d := recordsOf(drift, audit.TypeIdentityDrift)[0]; !strings.Contains(fieldJSON(d, "changed"), `"."`) { // the project tree, the code of a script entry
		t.Errorf("identity_drift record does not say what changed: %+v", d.Fields)
	}
	if rs := recordsOf(drift, audit.TypeGrantRevoked); len(rs) != 1 || rs[0].Fields["reason"] != "identity_drift" {
		t.Errorf("grant_revoked records after the drift: %+v, want one with reason identity_drift", rs)
	}

	r := c.callWait("read", nil)
	wantError(t, r, host.CodeAuthorizationStale, "authorization_stale: identity_drift:")
	if _, err := os.Stat(p.path("evil.ran")); err == nil {
		t.Fatal("the code saved after the approval ran under it")
	}
	if out, code := p.runCLI(nil, "approve", "--dir", p.dir, "--yes", "--tools", "read"); code == 0 {
		t.Fatalf("approve of the drifted epoch: exit 0\n%s", out)
	}
	wantText(t, c.callWait("ping", nil), "pong")

	// A build starts an epoch on the new code, approved anew.
	p.record()
	p.waitCatalog()
	p.cli("approve", "--dir", p.dir, "--yes", "--tools", "read")
	wantText(t, c.callWait("read", nil), "unapproved code")
}

// A drift that is put back before the build (a file rewritten with the
// bytes it had, caught between its truncation and its write; or saved and
// reverted) leaves the code on disk as the epoch was hashed, but what the
// server read meanwhile cannot be told: the build still starts an epoch,
// as the drift refusal promised, instead of finding nothing changed and
// leaving the drifted epoch refusing calls until a restart.
func TestDriftPutBackBuildStartsAnEpoch(t *testing.T) {
	t.Parallel()
	p, c := newLazyProject(t)
	p.record()
	first := p.status().Execution.Epoch

	p.write("app/impl.py", "def run():\n    return 'for a moment'\n")
	p.waitRecords("identity_drift record", func(rs []audit.Record) bool {
		return len(recordsOf(rs, audit.TypeIdentityDrift)) == 1
	})
	p.write("app/impl.py", "def run():\n    return 'approved code'\n") // back as it was hashed
	p.record()
	p.waitCatalog()
	if now := p.status().Execution.Epoch; now == first {
		t.Fatalf("the build after a drift put back left the drifted epoch %s running", first)
	}
	p.cli("approve", "--dir", p.dir, "--yes", "--tools", "read")
	wantText(t, c.callWait("read", nil), "approved code")
}

// recordsOf returns the records of rs of type typ.
func recordsOf(rs []audit.Record, typ string) []audit.Record {
	var out []audit.Record
	for _, r := range rs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// fieldJSON is field name of r as JSON.
func fieldJSON(r audit.Record, name string) string {
	b, _ := json.Marshal(r.Fields[name])
	return string(b)
}

// Code no notification vouches for is hashed again before every granted
// call: a module that is a symbolic link out of the project, or a file
// with another name outside the watched tree (a hard link), written
// through what the watcher does not watch, is seen at the next granted
// call, which is refused before the new code runs.
func TestUnwatchedCodeHashedForEveryGrantedCall(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "python3", testenv.InstallPython)
	for _, tc := range []struct {
		name string
		// place makes app/impl.py and returns the path a write reaches
		// it through.
		place func(t *testing.T, p *project, code string) string
	}{
		{"symbolic link out of the project", func(t *testing.T, p *project, code string) string {
			out := filepath.Join(t.TempDir(), "impl.py")
			if err := os.WriteFile(out, []byte(code), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(out, p.path("app/impl.py")); err != nil {
				t.Fatal(err)
			}
			return out
		}},
		{"hard link outside the tree", func(t *testing.T, p *project, code string) string {
			p.write("app/impl.py", code)
			other := p.path(".mcpepoch-other-name")
			if err := os.Link(p.path("app/impl.py"), other); err != nil {
				t.Fatal(err)
			}
			return other
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newProject(t, nil)
			if err := os.Mkdir(p.path("app"), 0o755); err != nil {
				t.Fatal(err)
			}
			p.write("app/__init__.py", "")
			p.write("app/server.py", testenv.PythonServer(t, "lazy"))
			through := tc.place(t, p, "def run():\n    return 'approved code'\n")
			p.write("mcpepoch.toml", "command = [\"python3\", \"-B\", \"-m\", \"app.server\"]\n\n[grants]\nproof = [\"same-user\"]\nexempt = [\"ping\"]\n")
			c := startRaw(t, p, nil, "python3", "-B", "-m", "app.server")
			c.initialize()
			c.listTools()
			p.waitCatalog()
			p.cli("approve", "--dir", p.dir, "--yes", "--tools", "read")

			// Written through the other name: same size, no event for
			// the tree's own name.
			if err := os.WriteFile(through, []byte("def run():\n    return 'unapproved cod'\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			r := c.callWait("read", nil)
			wantError(t, r, host.CodeAuthorizationStale, "authorization_stale: identity_drift:")
		})
	}
}
