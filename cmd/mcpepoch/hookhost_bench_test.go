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
// (goal <= 1.0). Each round also times `mcpepoch version` in the first
// project (version-ms, version/git): the start of the binary, which every
// record pays before its own work. Both records must find nothing changed, and the first
// must take its trees from the host. A tree with a link leading out of it
// (examples/inventory-node/node_modules links the local npm package) is
// walked at every build even with a host, which this does not measure. $MCPEPOCH_BENCH_BIN is the mcpepoch
// binary (default: built for the test). With $MCPEPOCH_BENCH_BEFORE, an
// earlier mcpepoch binary, two more copies get the same two records by
// that binary (its own host in the first) in the same rotated rounds,
// reported as before-host/git and before-nohost/git: a before and after
// in one run.
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
	env := append(os.Environ(), "NO_COLOR=1")
	bins := []string{bin}
	if before := os.Getenv("MCPEPOCH_BENCH_BEFORE"); before != "" {
		bins = append(bins, before)
	}
	// pairs[i] is bins[i]'s project with a host and its project without.
	pairs := make([][2]string, len(bins))
	for i, bn := range bins {
		pairs[i] = [2]string{benchProject(b, tree), benchProject(b, tree)}
		startBenchHost(b, bn, pairs[i][0], env)
	}
	record := func(bn, dir string) *exec.Cmd {
		c := exec.Command(bn, "record", "--json")
		c.Dir, c.Env = dir, env
		return c
	}
	for range 2 { // warm every project, past the racy window
		for i, bn := range bins {
			for _, dir := range pairs[i] {
				if out, err := record(bn, dir).CombinedOutput(); err != nil {
					b.Fatalf("%s record: %v\n%s", bn, err, out)
				}
			}
		}
		time.Sleep(2500 * time.Millisecond)
	}
	var git, version samples
	times := make([][2]samples, len(bins)) // [bin][host, none]
	round := 0
	for b.Loop() {
		steps := []func(){func() {
			g := exec.Command("git", "status", "--porcelain")
			g.Dir = pairs[0][0]
			git = append(git, timeRun(b, g, nil))
		}, func() {
			v := exec.Command(bin, "version")
			v.Dir, v.Env = pairs[0][0], env
			version = append(version, timeRun(b, v, nil))
		}}
		outs := make([][2]strings.Builder, len(bins))
		for i, bn := range bins {
			for k, dir := range pairs[i] {
				steps = append(steps, func() {
					c := record(bn, dir)
					c.Stdout = &outs[i][k]
					times[i][k] = append(times[i][k], timeRun(b, c, nil))
				})
			}
		}
		for k := range steps {
			steps[(round+k)%len(steps)]()
		}
		round++
		for i := range bins {
			if h := outs[i][0].String(); !strings.Contains(h, `"treesFrom"`) || !strings.Contains(h, `"changed": []`) {
				b.Fatalf("%s record with a host listening walked or found a change:\n%s", bins[i], h)
			}
			if n := outs[i][1].String(); !strings.Contains(n, `"changed": []`) {
				b.Fatalf("%s record without a host found a change:\n%s", bins[i], n)
			}
		}
	}
	g := git.report(b, "git")
	b.ReportMetric(float64(version.report(b, "version"))/float64(g), "version/git")
	for i, prefix := range []string{"", "before-"}[:len(bins)] {
		h := times[i][0].report(b, prefix+"host")
		n := times[i][1].report(b, prefix+"nohost")
		b.ReportMetric(float64(h)/float64(g), prefix+"host/git")
		b.ReportMetric(float64(n)/float64(g), prefix+"nohost/git")
	}
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
