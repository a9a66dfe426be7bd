package build

import (
	"crypto/sha256"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The benchmarks below measure TreeDigest on a real dependency tree next to
// what it is judged against, in one run: the start of an empty Go program
// (a warm hook must cost about that), SHA-256 over the same bytes as one
// stream (what a full pass cannot beat), and sha256sum(1) over the files.
// scripts/bench-tree.sh installs a tree from npm, runs them and prints the
// ratios.

// benchTreeRoot returns $MCPEPOCH_BENCH_TREE or skips.
func benchTreeRoot(b *testing.B) string {
	root := os.Getenv("MCPEPOCH_BENCH_TREE")
	if root == "" {
		b.Skip("MCPEPOCH_BENCH_TREE is not set; scripts/bench-tree.sh sets it to an installed node_modules")
	}
	return root
}

// benchFile is a regular file of the benchmark tree.
type benchFile struct {
	path string
	size int64
}

// benchFiles returns the regular files under root (links not followed)
// and their total size.
func benchFiles(b *testing.B, root string) ([]benchFile, int64) {
	var files []benchFile
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files = append(files, benchFile{p, info.Size()})
		total += info.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return files, total
}

// BenchmarkTreeDigestWarm is what the build hook pays on an unchanged
// tree: load the stat cache from its file, stat every entry, hash nothing.
func BenchmarkTreeDigestWarm(b *testing.B) {
	root := benchTreeRoot(b)
	path := filepath.Join(b.TempDir(), "tree.bin")
	c := NewStatCache()
	for try := 0; ; try++ {
		tr, err := TreeDigest(root, TreeOptions{Cache: c})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Save(path); err != nil {
			b.Fatal(err)
		}
		if tr.Hashed == 0 {
			break
		}
		if try == 3 {
			b.Fatalf("the tree keeps changing: %d files hashed on run %d", tr.Hashed, try)
		}
		if try > 0 { // entries still racy: let them age
			time.Sleep(racyWindow)
		}
	}
	var tr Tree
	for b.Loop() {
		c, err := LoadStatCache(path)
		if err != nil {
			b.Fatal(err)
		}
		tr, err = TreeDigest(root, TreeOptions{Cache: c})
		if err != nil {
			b.Fatal(err)
		}
		if tr.Hashed != 0 || c.Dirty() {
			b.Fatalf("warm run hashed %d files", tr.Hashed)
		}
	}
	b.ReportMetric(float64(tr.Files), "files")
}

// BenchmarkTreeDigestCold hashes every file, with no cache.
func BenchmarkTreeDigestCold(b *testing.B) {
	root := benchTreeRoot(b)
	var tr Tree
	for b.Loop() {
		var err error
		tr, err = TreeDigest(root, TreeOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(tr.Bytes)
	b.ReportMetric(float64(tr.Files), "files")
}

// BenchmarkSHA256Stream hashes the concatenated content of the tree's
// regular files, read from one file with a 1 MiB buffer.
func BenchmarkSHA256Stream(b *testing.B) {
	root := benchTreeRoot(b)
	files, total := benchFiles(b, root)
	cat := filepath.Join(b.TempDir(), "cat")
	out, err := os.Create(cat)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range files {
		in, err := os.Open(f.path)
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
	b.SetBytes(total)
	for b.Loop() {
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
	}
}

// BenchmarkExecNoop starts an empty Go program and waits for it.
// $MCPEPOCH_BENCH_NOOP names a built one; otherwise it is built here.
func BenchmarkExecNoop(b *testing.B) {
	benchTreeRoot(b)
	bin := os.Getenv("MCPEPOCH_BENCH_NOOP")
	if bin == "" {
		dir := b.TempDir()
		src := filepath.Join(dir, "main.go")
		if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		bin = filepath.Join(dir, "noop")
		cmd := exec.Command("go", "build", "-o", bin, src)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GO111MODULE=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
	}
	for b.Loop() {
		if err := exec.Command(bin).Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSha256sumExec runs find -type f -print0 | xargs -0 sha256sum
// over the tree.
func BenchmarkSha256sumExec(b *testing.B) {
	root := benchTreeRoot(b)
	_, total := benchFiles(b, root)
	b.SetBytes(total)
	for b.Loop() {
		cmd := exec.Command("sh", "-c", `find "$1" -type f -print0 | xargs -0 sha256sum >/dev/null`, "sh", root)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}

// BenchmarkFileHashOSOpen and BenchmarkFileHashRaw read and hash every
// regular file of the tree in one goroutine, through os.Open and a read
// loop to EOF, and through the raw open/read/close TreeDigest uses (which
// stops at the size lstat reported): the measurement behind that choice.
func BenchmarkFileHashOSOpen(b *testing.B) {
	root := benchTreeRoot(b)
	files, total := benchFiles(b, root)
	buf := make([]byte, 1<<20)
	h := sha256.New()
	b.SetBytes(total)
	for b.Loop() {
		for _, bf := range files {
			f, err := os.Open(bf.path)
			if err != nil {
				b.Fatal(err)
			}
			h.Reset()
			for {
				n, err := f.Read(buf)
				h.Write(buf[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			f.Close()
		}
	}
}

func BenchmarkFileHashRaw(b *testing.B) {
	root := benchTreeRoot(b)
	files, total := benchFiles(b, root)
	buf := make([]byte, 1<<20)
	h := sha256.New()
	b.SetBytes(total)
	for b.Loop() {
		for _, f := range files {
			if _, err := atCWD().hashFile(f.path, f.path, f.size, h, buf); err != nil {
				b.Fatal(err)
			}
		}
	}
}
