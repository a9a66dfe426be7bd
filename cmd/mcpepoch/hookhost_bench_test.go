package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// BenchmarkHookWarmGit times, per round and in rotated order, on two
// copies of the same project (the dependency tree $MCPEPOCH_BENCH_TREE,
// default testdata/node/node_modules, 3.7k files; a one-file dist/ and a
// node server): `git status` in the first; warm `mcpepoch record` in the
// first, where a host listens (`mcpepoch host` with its server running);
// and warm `mcpepoch record` in the second, where none does. It reports
// their medians and the ratios host/git (goal <= 0.5) and nohost/git
// (goal <= 1.0). Both records must find nothing changed, and the first
// must take its trees from the host. A tree with a link leading out of it
// (examples/inventory-node/node_modules links the local npm package) is
// walked at every build even with a host, which this does not measure. $MCPEPOCH_BENCH_BIN is the mcpepoch
// binary (default: built for the test).
func BenchmarkHookWarmGit(b *testing.B) {
	tree := os.Getenv("MCPEPOCH_BENCH_TREE")
	if tree == "" {
		tree = filepath.Join(testenv.RepoRoot(b), "testdata", "node", "node_modules")
	}
	if _, err := os.Stat(tree); err != nil {
		b.Skipf("no dependency tree to measure (%v): npm ci in testdata/node, or set MCPEPOCH_BENCH_TREE", err)
	}
	bin := os.Getenv("MCPEPOCH_BENCH_BIN")
	if bin == "" {
		bin = testenv.Mcpepoch(b)
	}
	withHost, alone := benchProject(b, tree), benchProject(b, tree)
	env := append(os.Environ(), "NO_COLOR=1")
	startBenchHost(b, bin, withHost, env)
	record := func(dir string) *exec.Cmd {
		c := exec.Command(bin, "record", "--json")
		c.Dir, c.Env = dir, env
		return c
	}
	for _, dir := range []string{withHost, alone} { // warm both, past the racy window
		for range 2 {
			if out, err := record(dir).CombinedOutput(); err != nil {
				b.Fatalf("record: %v\n%s", err, out)
			}
			time.Sleep(2500 * time.Millisecond)
		}
	}
	var git, host, nohost samples
	round := 0
	for b.Loop() {
		var outHost, outAlone strings.Builder
		steps := []func(){
			func() {
				g := exec.Command("git", "status", "--porcelain")
				g.Dir = withHost
				git = append(git, timeRun(b, g, nil))
			},
			func() { c := record(withHost); c.Stdout = &outHost; host = append(host, timeRun(b, c, nil)) },
			func() { c := record(alone); c.Stdout = &outAlone; nohost = append(nohost, timeRun(b, c, nil)) },
		}
		for k := range steps {
			steps[(round+k)%len(steps)]()
		}
		round++
		if !strings.Contains(outHost.String(), `"treesFrom"`) || !strings.Contains(outHost.String(), `"changed": []`) {
			b.Fatalf("record with a host listening walked or found a change:\n%s", outHost.String())
		}
		if !strings.Contains(outAlone.String(), `"changed": []`) {
			b.Fatalf("record without a host found a change:\n%s", outAlone.String())
		}
	}
	g := git.report(b, "git")
	h := host.report(b, "host")
	n := nohost.report(b, "nohost")
	b.ReportMetric(float64(h)/float64(g), "host/git")
	b.ReportMetric(float64(n)/float64(g), "nohost/git")
}

// benchProject makes a project with a copy of tree as node_modules, a
// one-file dist/ served by node, all committed to a git repository.
func benchProject(b *testing.B, tree string) string {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	files := map[string]string{
		"mcpepoch.toml":  "command = [\"node\", \"dist/server.js\"]\n",
		"dist/server.js": "process.stdin.resume();\n",
		"package.json":   "{}\n",
	}
	for name, content := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"cp", "-a", tree, filepath.Join(dir, "node_modules")},
		{"git", "init", "-q"},
		{"sh", "-c", "echo .mcpepoch/ >> .git/info/exclude"},
		{"git", "add", "-A"},
		{"git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q", "-m", "tree"},
	} {
		c := exec.Command(args[0], args[1:]...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("%q: %v\n%s", args, err, out)
		}
	}
	return dir
}

// startBenchHost runs mcpepoch host in dir until the benchmark ends, and
// waits until it listens.
func startBenchHost(b *testing.B, bin, dir string, env []string) {
	c := exec.Command(bin, "host", "--dir", dir)
	c.Dir, c.Env = dir, env
	stdin, err := c.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr testenv.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	b.Cleanup(func() {
		stdin.Close() // the host stops its server and exits
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			c.Process.Kill()
			<-done
		}
		if b.Failed() {
			b.Logf("mcpepoch host stderr:\n%s", stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "listening on") {
		if time.Now().After(deadline) {
			b.Fatalf("mcpepoch host did not listen within 30 s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
