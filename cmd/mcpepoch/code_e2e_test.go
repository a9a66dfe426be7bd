package main

// End-to-end tests of the project's own code in the identity: the real
// Node example, split into two modules and built with the real TypeScript
// compiler, served through `mcpepoch host` to a real MCP client.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// splitRevision moves the example's REVISION into src/lib/revision.ts,
// which tsc compiles to dist/lib/revision.js, so that a rebuild can change
// that module alone.
func (p *project) splitRevision(rev string) {
	p.t.Helper()
	p.edit(func(s string) string {
		return revisionRE.ReplaceAllString(s, `import { REVISION } from "./lib/revision.js";`)
	})
	p.setLibRevision(rev)
}

// setLibRevision rewrites src/lib/revision.ts.
func (p *project) setLibRevision(rev string) {
	p.t.Helper()
	name := p.path("src/lib/revision.ts")
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(`export const REVISION = "`+rev+`";`+"\n"), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// A rebuild that changes only dist/lib/revision.js, not the entry
// dist/server.js, is new code: the hook names the project tree (the code
// of a script entry) as changed, the host restarts the server, and the
// client is answered by the new code.
func TestCodeTreeChangeRestartsServer(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.splitRevision("A")
	p.build()
	c := p.host()
	p.record()
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=A"; got != want {
		t.Fatalf("lookup = %q, want %q", got, want)
	}
	entry, _ := sha256File(t, p.path("dist/server.js"))

	p.setLibRevision("B")
	p.build()
	if now, _ := sha256File(t, p.path("dist/server.js")); now != entry {
		t.Fatal("the rebuild changed dist/server.js: this test needs the entry byte-identical")
	}
	stderr := p.record()
	wantLine(t, stderr, "build complete: . changed")
	if rs := restarts(stderr); len(rs) != 1 {
		t.Fatalf("%d restart lines, want 1:\n%s", len(rs), stderr)
	}
	if got, want := call(t, c, "inventory_lookup", map[string]any{"sku": "bolt"}), "sku=bolt quantity=0 revision=B"; got != want {
		t.Errorf("lookup after the rebuild = %q, want %q", got, want)
	}
	if d := p.onlyHost().Drift; len(d) != 0 {
		t.Errorf("status drift after the restart: %q", d)
	}
}

// A deleted lockfile is a change: the hook names it gone, the host
// restarts onto the new identity, and the audit log's records of the build
// and of the replacement say so.
func TestLockfileGoneReported(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	p.host()
	p.record()
	if err := os.Remove(p.path("package-lock.json")); err != nil {
		t.Fatal(err)
	}
	stderr := p.record()
	wantLine(t, stderr, "build complete: package-lock.json (gone) changed")
	if rs := restarts(stderr); len(rs) != 1 {
		t.Fatalf("%d restart lines, want 1:\n%s", len(rs), stderr)
	}
	b, err := os.ReadFile(p.path(".mcpepoch/audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{`"build_recorded"`, `"server_replaced"`} {
		found := false
		for _, line := range strings.Split(string(b), "\n") {
			found = found || strings.Contains(line, typ) && strings.Contains(line, `"package-lock.json (gone)"`)
		}
		if !found {
			t.Errorf("no %s audit record names package-lock.json (gone):\n%s", typ, b)
		}
	}
}
