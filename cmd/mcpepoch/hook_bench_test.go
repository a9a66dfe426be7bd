package main

import (
	"crypto/sha256"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/manifest"
)

// The benchmarks below measure the build hook on a real project next to
// what it is judged against, interleaved in one run so that other work on
// the machine weighs on both sides alike. scripts/bench-hook.sh installs
// the project from npm, warms the hook's caches, runs them with
// -benchtime=30x and prints the ratios. Each reports the median (and the
// fastest and the 90th percentile) of its samples as custom metrics; ns/op
// is the time of one whole interleaved round.

// benchEnv returns $name or skips the benchmark.
func benchEnv(b *testing.B, name string) string {
	v := os.Getenv(name)
	if v == "" {
		b.Skipf("%s is not set; scripts/bench-hook.sh sets it", name)
	}
	return v
}

// samples collects durations.
type samples []time.Duration

// report adds the median, fastest and 90th percentile of s, in ms, as
// metrics named prefix+"-ms", prefix+"-min-ms" and prefix+"-p90-ms".
func (s samples) report(b *testing.B, prefix string) time.Duration {
	if len(s) == 0 {
		b.Fatalf("no %s sample", prefix)
	}
	c := slices.Clone(s)
	slices.Sort(c)
	med := c[len(c)/2]
	if len(c)%2 == 0 {
		med = (c[len(c)/2-1] + c[len(c)/2]) / 2
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(med), prefix+"-ms")
	b.ReportMetric(ms(c[0]), prefix+"-min-ms")
	b.ReportMetric(ms(c[(len(c)*9+9)/10-1]), prefix+"-p90-ms")
	return med
}

// timeRun runs cmd and returns its wall time, failing on a non-zero exit.
// Its standard error goes to stderr when not nil.
func timeRun(b *testing.B, cmd *exec.Cmd, stderr *strings.Builder) time.Duration {
	if stderr == nil {
		stderr = &strings.Builder{}
	}
	cmd.Stderr = stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%v: %v\n%s", cmd.Args, err, stderr)
	}
	return d
}

// cacheStamps returns the modification times of the files in dir.
func cacheStamps(b *testing.B, dir string) map[string]time.Time {
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]time.Time{}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			b.Fatal(err)
		}
		out[e.Name()] = fi.ModTime()
	}
	return out
}

// BenchmarkHookWarm times, per round, `mcpepoch record` in
// $MCPEPOCH_BENCH_PROJECT (warm caches, nothing changed, no host
// listening), the start of the empty Go program $MCPEPOCH_BENCH_NOOP, and
// `mcpepoch version` (what starting the mcpepoch binary itself costs), the
// order rotated every round. $MCPEPOCH_BENCH_BIN is the mcpepoch binary. It
// fails if a round found a change or rewrote a cache: then the hook
// measured was not warm.
func BenchmarkHookWarm(b *testing.B) {
	dir := benchEnv(b, "MCPEPOCH_BENCH_PROJECT")
	bin := benchEnv(b, "MCPEPOCH_BENCH_BIN")
	noop := benchEnv(b, "MCPEPOCH_BENCH_NOOP")
	cacheDir := filepath.Join(dir, ".mcpepoch", "cache")
	env := append(os.Environ(), "NO_COLOR=1")
	// go test puts its own directory first on PATH, and PATH is part of
	// the identity: one record, not timed, takes that in.
	first := exec.Command(bin, "record")
	first.Dir, first.Env = dir, env
	timeRun(b, first, nil)
	before := cacheStamps(b, cacheDir)
	var hook, start, version samples
	round := 0
	for b.Loop() {
		var stderr strings.Builder
		steps := []func(){
			func() {
				rec := exec.Command(bin, "record")
				rec.Dir, rec.Env = dir, env
				hook = append(hook, timeRun(b, rec, &stderr))
			},
			func() { start = append(start, timeRun(b, exec.Command(noop), nil)) },
			func() {
				v := exec.Command(bin, "version")
				v.Dir, v.Env = dir, env
				version = append(version, timeRun(b, v, nil))
			},
		}
		for k := range steps {
			steps[(round+k)%len(steps)]()
		}
		round++
		if !strings.Contains(stderr.String(), "build complete: nothing changed\n") {
			b.Fatalf("record found a change, the hook is not warm:\n%s", stderr.String())
		}
	}
	if after := cacheStamps(b, cacheDir); !maps.EqualFunc(before, after, time.Time.Equal) {
		b.Fatalf("record rewrote its caches (%v → %v): entries were not trusted, the hook is not warm", before, after)
	}
	h := hook.report(b, "hook")
	n := start.report(b, "noop")
	version.report(b, "version")
	b.ReportMetric(float64(h)/float64(n), "hook/noop")
}

// BenchmarkComputeWarm is the identity part of a warm hook in
// $MCPEPOCH_BENCH_PROJECT, in process: load mcpepoch.toml and the manifest,
// build.Compute with the project's caches (nothing hashed). Run it with
// -cpuprofile to see where a warm hook's time goes beyond process start.
func BenchmarkComputeWarm(b *testing.B) {
	dir := benchEnv(b, "MCPEPOCH_BENCH_PROJECT")
	var id *build.Identity
	for b.Loop() {
		cfg, err := config.Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		prev, err := manifest.Read(layout.Manifest(dir))
		if err != nil {
			b.Fatal(err)
		}
		spec := cfg.Spec(dir)
		spec.Command, spec.Versions = cfg.Command, prev.RuntimeVersion
		if id, err = build.Compute(spec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(id.Artifacts())), "inputs")
}

// BenchmarkTreeCold times, per round, a full build.TreeDigest of
// $MCPEPOCH_BENCH_TREE with no cache, SHA-256 over the same bytes read as
// one stream from one file with a 1 MiB buffer, and
// find -type f -print0 | xargs -0 sha256sum over the tree, in that order.
// The files are in the page cache after the first round: what is measured
// is hashing and system calls, not the disk.
func BenchmarkTreeCold(b *testing.B) {
	root := benchEnv(b, "MCPEPOCH_BENCH_TREE")
	var total int64
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, p)
		total += info.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	cat := filepath.Join(b.TempDir(), "cat")
	out, err := os.Create(cat)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range files {
		in, err := os.Open(f)
		if err != nil {
			b.Fatal(err)
		}
		_, err = io.Copy(out, in)
		in.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	h := sha256.New()
	var tree, stream, sum samples
	var tr build.Tree
	for b.Loop() {
		t0 := time.Now()
		tr, err = build.TreeDigest(root, build.TreeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		f, err := os.Open(cat)
		if err != nil {
			b.Fatal(err)
		}
		h.Reset()
		n, err := io.CopyBuffer(struct{ io.Writer }{h}, struct{ io.Reader }{f}, buf)
		f.Close()
		if err != nil || n != total {
			b.Fatalf("read %d of %d bytes: %v", n, total, err)
		}
		t2 := time.Now()
		cmd := exec.Command("sh", "-c", `find "$1" -type f -print0 | xargs -0 sha256sum >/dev/null`, "sh", root)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		t3 := time.Now()
		tree, stream, sum = append(tree, t1.Sub(t0)), append(stream, t2.Sub(t1)), append(sum, t3.Sub(t2))
	}
	if tr.Bytes != total {
		b.Fatalf("TreeDigest hashed %d bytes, the stream %d", tr.Bytes, total)
	}
	dt := tree.report(b, "tree")
	ds := stream.report(b, "stream")
	dx := sum.report(b, "sha256sum")
	b.ReportMetric(float64(tr.Files), "files")
	b.ReportMetric(float64(total)/1e6, "MB")
	b.ReportMetric(float64(ds)/float64(dt), "tree/stream-throughput")
	b.ReportMetric(float64(dx)/float64(dt), "tree/sha256sum-speedup")
}
