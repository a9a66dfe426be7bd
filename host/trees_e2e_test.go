package host_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/mcpepoch/mcpepoch/build"
)

// recorded is the part of mcpepoch record --json these tests read.
type recorded struct {
	Changed   []string `json:"changed"`
	TreesFrom string   `json:"treesFrom"`
	Hosts     []struct {
		Run      string `json:"run"`
		Result   string `json:"result"`
		NewEpoch string `json:"newEpoch"`
	} `json:"hosts"`
}

func (p *project) recordJSON(args ...string) recorded {
	p.t.Helper()
	out := p.cli(append([]string{"record", "--dir", p.dir, "--json"}, args...)...)
	var r recorded
	if err := json.Unmarshal([]byte(out.Stdout), &r); err != nil {
		p.t.Fatalf("record --json: %v\n%s", err, out)
	}
	return r
}

// buildLines matches the lines of a manifest that name the build itself
// (its id and time), which differ between two records of the same tree.
var buildLines = regexp.MustCompile(`(?m)^\s*(id|completed)\s*=.*$`)

// treesProject is a project whose identity has a code tree (dist, named in
// mcpepoch.toml) and a dependency tree (node_modules, with a native addon)
// besides the fixture server, and a host serving it.
func treesProject(t *testing.T) (*project, *raw) {
	t.Helper()
	p := newProject(t, nil)
	p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\ncode = [\"dist\"]\n\n[grants]\nexempt = [\"**\"]\n")
	for name, content := range map[string]string{
		"dist/index.js": "one", "dist/lib/a.js": "a",
		"node_modules/dep/package.json": "{}", "node_modules/dep/index.js": "d",
		"node_modules/dep/build/addon.node": "\x7fELF",
	} {
		if err := os.MkdirAll(filepath.Dir(p.path(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		p.write(name, content)
	}
	c := startRaw(t, p, nil)
	c.initialize()
	waitFor(t, waitLong, "the host to listen", func() bool { return listeningRe.MatchString(c.stderr.String()) })
	return p, c
}

// TestRecordTakesTreesFromHost: with a host listening, record takes the
// trees' digests from the host's answer instead of walking them, and the
// manifest it writes is the one a walk writes (record --rehash walks every
// tree), byte for byte but for the build's id and time.
func TestRecordTakesTreesFromHost(t *testing.T) {
	t.Parallel()
	p, _ := treesProject(t)
	p.recordJSON() // the first build: every artifact is new
	fromHost := p.recordJSON()
	if fromHost.TreesFrom == "" || len(fromHost.Hosts) != 1 || fromHost.TreesFrom != fromHost.Hosts[0].Run {
		t.Fatalf("record with a host listening: treesFrom %q, hosts %+v: want the host's run", fromHost.TreesFrom, fromHost.Hosts)
	}
	hostManifest := buildLines.ReplaceAllString(p.read(".mcpepoch/manifest.toml"), "")
	walked := p.recordJSON("--rehash")
	if walked.TreesFrom != "" {
		t.Fatalf("record --rehash took trees from host %s", walked.TreesFrom)
	}
	walkManifest := buildLines.ReplaceAllString(p.read(".mcpepoch/manifest.toml"), "")
	if hostManifest != walkManifest {
		t.Fatalf("manifest from the host's trees differs from a walk's:\n--- host\n%s\n--- walk\n%s", hostManifest, walkManifest)
	}
	if !regexp.MustCompile(`native\s*=\s*1`).MatchString(walkManifest) {
		t.Fatalf("the manifest records no native addon:\n%s", walkManifest)
	}
}

// TestHostSeesTreeChanges: with a host listening, every kind of change a
// build or an editor makes in a tree the host watches is a change at the
// next record, and the host restarts the server; the digest recorded is
// the digest of the tree on disk.
func TestHostSeesTreeChanges(t *testing.T) {
	t.Parallel()
	p, _ := treesProject(t)
	p.recordJSON()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = p.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%q: %v\n%s", args, err, out)
		}
	}
	epoch := ""
	for _, step := range []struct {
		what, tree string
		change     func()
	}{
		{"write in place", "dist", func() { os.WriteFile(p.path("dist/lib/a.js"), []byte("a2"), 0o644) }},
		{"sed -i", "dist", func() { run("sed", "-i", "s/one/two/", "dist/index.js") }},
		{"delete", "dist", func() { run("rm", "dist/lib/a.js") }},
		{"new directory with a file", "dist", func() { run("sh", "-c", "mkdir -p dist/new/sub && echo n > dist/new/sub/n.js") }},
		{"write in the new directory", "dist", func() { run("sh", "-c", "echo m >> dist/new/sub/n.js") }},
		{"symbolic link", "dist", func() { run("ln", "-s", "index.js", "dist/alias.js") }},
		{"dependency tree", "node_modules", func() { run("sh", "-c", "echo d2 > node_modules/dep/index.js") }},
		{"rebuilt from scratch", "dist", func() { run("sh", "-c", "rm -rf dist && mkdir dist && echo three > dist/index.js") }},
	} {
		step.change()
		r := p.recordJSON()
		if r.TreesFrom == "" {
			t.Fatalf("%s: record walked the trees with a host listening", step.what)
		}
		if !slices.Contains(r.Changed, step.tree) {
			t.Fatalf("%s: record reports %q changed, want %s", step.what, r.Changed, step.tree)
		}
		if len(r.Hosts) != 1 || r.Hosts[0].Result != "restarted" || r.Hosts[0].NewEpoch == epoch {
			t.Fatalf("%s: hosts %+v, want one restarted under a new epoch", step.what, r.Hosts)
		}
		epoch = r.Hosts[0].NewEpoch
		opt := build.TreeOptions{SkipDirs: build.CodeSkipDirs}
		if step.tree == "node_modules" {
			opt.SkipDirs = build.TreeSkipDirs
		}
		want, err := build.TreeDigest(p.path(step.tree), opt)
		if err != nil {
			t.Fatal(err)
		}
		if m := p.read(".mcpepoch/manifest.toml"); !regexp.MustCompile(`(?s)path = "` + step.tree + `"\s*digest = "` + regexp.QuoteMeta(string(want.Digest)) + `"`).MatchString(m) {
			t.Fatalf("%s: the manifest does not record %s as %s:\n%s", step.what, step.tree, want.Digest, m)
		}
		if again := p.recordJSON(); len(again.Changed) != 0 || again.Hosts[0].Result != "unchanged" {
			t.Fatalf("%s: a second record reports %q changed, host %+v", step.what, again.Changed, again.Hosts)
		}
	}
}

// TestHostTreeWithLinkOutside: a dependency tree with a link leading out of
// it (a workspace package) is not one the host answers for: the hook walks
// it, the host walks it at every build, and a change behind the link is a
// change the host restarts for.
func TestHostTreeWithLinkOutside(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.write("mcpepoch.toml", "command = [\"sh\", \"./server.sh\"]\ncode = [\"dist\"]\n\n[grants]\nexempt = [\"**\"]\n")
	for _, d := range []string{"dist", "node_modules", "packages/ws"} {
		if err := os.MkdirAll(p.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p.write("dist/index.js", "one")
	p.write("packages/ws/index.js", "w1")
	if err := os.Symlink("../packages/ws", p.path("node_modules/ws")); err != nil {
		t.Fatal(err)
	}
	c := startRaw(t, p, nil)
	c.initialize()
	waitFor(t, waitLong, "the host to listen", func() bool { return listeningRe.MatchString(c.stderr.String()) })
	p.recordJSON()
	p.write("packages/ws/index.js", "w2")
	r := p.recordJSON()
	if !slices.Contains(r.Changed, "node_modules") || len(r.Hosts) != 1 || r.Hosts[0].Result != "restarted" {
		t.Fatalf("a change behind a link leading out of node_modules: changed %q, hosts %+v", r.Changed, r.Hosts)
	}
	if r.TreesFrom == "" {
		t.Fatal("record took no tree from the host: dist is watched")
	}
}
