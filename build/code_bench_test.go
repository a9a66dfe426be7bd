package build

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkCodeTreeWarm is what the code tree adds to a warm hook: a
// project whose dist/ holds 2,000 files (100 directories of 20), computed
// warm (stat caches trusted, nothing hashed) with the code tree and, in the
// same round, with code = [] . It reports the median of each and
// added-ms/op, their difference; the goal is at most 5 ms.
func BenchmarkCodeTreeWarm(b *testing.B) {
	dir := b.TempDir()
	var files []idFile
	files = append(files, idFile{path: "dist/server.js", content: "require('./lib/m0/f0.js');\n"})
	for d := 0; d < 100; d++ {
		for f := 0; f < 20; f++ {
			if d == 0 && f == 0 {
				continue
			}
			files = append(files, idFile{path: fmt.Sprintf("dist/lib/m%d/f%d.js", d, f), content: fmt.Sprintf("module.exports = %d;\n", d*20+f)})
		}
	}
	idWrite(b, dir, files...)
	bin := b.TempDir()
	idWrite(b, bin, idFile{path: "node", content: "\x7fELF fake node\n", mode: 0o755})
	spec := Spec{Dir: dir, Command: []string{"node", "dist/server.js"}, Versions: idVersions,
		Environ: []string{"PATH=" + bin}, CacheDir: b.TempDir()}
	off := spec
	off.Code = []string{}
	for _, s := range []Spec{spec, off} { // fill the caches, then let them age
		if _, err := Compute(s); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(racyWindow + 200*time.Millisecond)
	for _, s := range []Spec{spec, off} {
		if _, err := Compute(s); err != nil {
			b.Fatal(err)
		}
	}
	var with, without []time.Duration
	for b.Loop() {
		t0 := time.Now()
		id, err := Compute(spec)
		t1 := time.Now()
		if _, err2 := Compute(off); err != nil || err2 != nil {
			b.Fatal(err, err2)
		}
		with, without = append(with, t1.Sub(t0)), append(without, time.Since(t1))
		if len(id.Code) != 1 || id.Code[0].Files != 1999 {
			b.Fatalf("code %+v, want dist with 1999 files besides the entry", id.Code)
		}
	}
	w, o := median(with), median(without)
	b.ReportMetric(float64(w.Microseconds())/1000, "with-ms")
	b.ReportMetric(float64(o.Microseconds())/1000, "without-ms")
	b.ReportMetric(float64((w-o).Microseconds())/1000, "added-ms/op")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
