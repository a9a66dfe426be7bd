package build

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// treeSpec describes one entry of a test tree: a file with content and
// mode, a directory (trailing slash), or a symbolic link ("->" target).
type treeSpec struct {
	path    string
	content string
	mode    fs.FileMode
	link    string
}

func mkTree(t *testing.T, root string, specs ...treeSpec) {
	t.Helper()
	for _, s := range specs {
		p := filepath.Join(root, filepath.FromSlash(s.path))
		switch {
		case strings.HasSuffix(s.path, "/"):
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if s.link != "" {
			if err := os.Symlink(s.link, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := s.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, []byte(s.content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // not subject to umask
			t.Fatal(err)
		}
	}
}

func mustTree(t *testing.T, root string, opt TreeOptions) Tree {
	t.Helper()
	tr, err := TreeDigest(root, opt)
	if err != nil {
		t.Fatalf("TreeDigest(%s): %v", root, err)
	}
	return tr
}

// goldenListing is the listing of the tree goldenTree builds. Its digest was
// computed independently with sha256sum(1).
const goldenListing = `mcpepoch-tree-v1
f - sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 a-b
f - sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03 a.txt
f - sha256:594e519ae499312b29433b7dd8a97ff068defcba9755b6d5d00e84c524d67b06 a/z.txt
f x sha256:299001868fb8c02fd431c336c6d058f5558c5dff5b5af5e6fe04b870a6a9cbba bin/run.sh
l - "missing/file" dangling
d - - empty
l - "../outside/pkg" ext
f - sha256:3bb55f6807977cc0d60639347bd2456b4ca250f32a5e3bf6733468259b2af6fc ext/index.js
l - "." ext/self
l - "../outside/pkg/index.js" extfile
f - sha256:3bb55f6807977cc0d60639347bd2456b4ca250f32a5e3bf6733468259b2af6fc extfile
l - "lib" lib-link
f x sha256:19d7f6d6cfda11ddd84466dfeaa3528ab0436a4d921d82d8ffc0a1b30d99e105 lib/addon.node
f - sha256:6e66e366f0aefb84ad8110afcd9b2245702c643c831edf8316ff048fec739d2e lib/index.js
f - sha256:1b16b1df538ba12dc3f97edbb85caa7050d46c148134290feba80f8236c83db9 "new\nline"
f - sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881 sp ace.txt
`

const goldenDigest = Digest("sha256:123f52950cfdb1f06a519a3a33eeadd8cd18f59441667e6e839cd808f8795919")

// goldenTree builds the golden tree in a fresh directory and returns its
// root; the directory "outside" next to it holds a workspace package.
func goldenTree(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	mkTree(t, base,
		treeSpec{path: "outside/pkg/index.js", content: "exports.ws = true;\n"},
		treeSpec{path: "outside/pkg/self", link: "."},
	)
	mkTree(t, root,
		treeSpec{path: "a.txt", content: "hello\n"},
		treeSpec{path: "a-b", content: ""},
		treeSpec{path: "a/z.txt", content: "z"},
		treeSpec{path: "bin/run.sh", content: "#!/bin/sh\necho hi\n", mode: 0o755},
		treeSpec{path: "empty/"},
		treeSpec{path: "lib/index.js", content: "module.exports = 1;\n"},
		treeSpec{path: "lib/addon.node", content: "not really an addon\n", mode: 0o700},
		treeSpec{path: "lib-link", link: "lib"},
		treeSpec{path: "dangling", link: "missing/file"},
		treeSpec{path: "sp ace.txt", content: "x", mode: 0o600},
		treeSpec{path: "new\nline", content: "n", mode: 0o640},
		treeSpec{path: "ext", link: "../outside/pkg"},
		treeSpec{path: "extfile", link: "../outside/pkg/index.js"},
	)
	return root
}

func TestTreeDigestGolden(t *testing.T) {
	t.Parallel()
	root := goldenTree(t)
	for _, workers := range []int{1, 3} {
		tr := mustTree(t, root, TreeOptions{KeepListing: true, Workers: workers})
		if string(tr.Listing) != goldenListing {
			t.Errorf("workers=%d listing:\n%s\nwant:\n%s", workers, tr.Listing, goldenListing)
		}
		if tr.Digest != goldenDigest {
			t.Errorf("workers=%d digest %s, want %s", workers, tr.Digest, goldenDigest)
		}
		if tr.Digest != DigestBytes(tr.Listing) {
			t.Errorf("digest is not the SHA-256 of the listing")
		}
		// a-b a.txt a/z.txt bin/run.sh ext/index.js extfile lib/addon.node lib/index.js new\nline "sp ace.txt"
		if tr.Files != 10 || tr.Symlinks != 5 || tr.Hashed != 10 {
			t.Errorf("files %d symlinks %d hashed %d, want 10 5 10", tr.Files, tr.Symlinks, tr.Hashed)
		}
		wantBytes := int64(len("hello\n") + 1 + len("#!/bin/sh\necho hi\n") + 2*len("exports.ws = true;\n") +
			len("not really an addon\n") + len("module.exports = 1;\n") + 1 + 1)
		if tr.Bytes != wantBytes {
			t.Errorf("bytes %d, want %d", tr.Bytes, wantBytes)
		}
		want := []TreeFile{{Path: "lib/addon.node", Digest: "sha256:19d7f6d6cfda11ddd84466dfeaa3528ab0436a4d921d82d8ffc0a1b30d99e105", Size: 20}}
		if fmt.Sprint(tr.NativeAddons) != fmt.Sprint(want) {
			t.Errorf("native addons %v, want %v", tr.NativeAddons, want)
		}
	}
	// The root may be given through a symbolic link and as a relative path.
	link := filepath.Join(filepath.Dir(root), "root-link")
	if err := os.Symlink("root", link); err != nil {
		t.Fatal(err)
	}
	if tr := mustTree(t, link, TreeOptions{}); tr.Digest != goldenDigest {
		t.Errorf("through a linked root: digest %s, want %s", tr.Digest, goldenDigest)
	}
}

func TestTreeDigestDetectsChanges(t *testing.T) {
	t.Parallel()
	root := goldenTree(t)
	outside := filepath.Join(filepath.Dir(root), "outside")
	base := mustTree(t, root, TreeOptions{}).Digest
	if base != goldenDigest {
		t.Fatalf("digest %s, want %s", base, goldenDigest)
	}
	changes := []struct {
		name   string
		change func() error
		undo   func() error
	}{
		{"edit a file",
			func() error { return os.WriteFile(filepath.Join(root, "a.txt"), []byte("hellO\n"), 0o644) },
			func() error { return os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644) }},
		{"set the exec bit",
			func() error { return os.Chmod(filepath.Join(root, "a.txt"), 0o744) },
			func() error { return os.Chmod(filepath.Join(root, "a.txt"), 0o644) }},
		{"clear the exec bit",
			func() error { return os.Chmod(filepath.Join(root, "bin/run.sh"), 0o644) },
			func() error { return os.Chmod(filepath.Join(root, "bin/run.sh"), 0o755) }},
		{"retarget a link inside",
			func() error { return relink(filepath.Join(root, "lib-link"), "bin") },
			func() error { return relink(filepath.Join(root, "lib-link"), "lib") }},
		{"retarget a link to an equal copy",
			func() error { return relink(filepath.Join(root, "lib-link"), "./lib") },
			func() error { return relink(filepath.Join(root, "lib-link"), "lib") }},
		{"repair a broken link",
			func() error { return relink(filepath.Join(root, "dangling"), "a.txt") },
			func() error { return relink(filepath.Join(root, "dangling"), "missing/file") }},
		{"edit a workspace package outside the root",
			func() error {
				return os.WriteFile(filepath.Join(outside, "pkg/index.js"), []byte("exports.ws = false;\n"), 0o644)
			},
			func() error {
				return os.WriteFile(filepath.Join(outside, "pkg/index.js"), []byte("exports.ws = true;\n"), 0o644)
			}},
		{"add a file to an empty directory",
			func() error { return os.WriteFile(filepath.Join(root, "empty/x"), nil, 0o644) },
			func() error { return os.Remove(filepath.Join(root, "empty/x")) }},
		{"remove an empty directory",
			func() error { return os.Remove(filepath.Join(root, "empty")) },
			func() error { return os.Mkdir(filepath.Join(root, "empty"), 0o755) }},
		{"rename a file",
			func() error { return os.Rename(filepath.Join(root, "a.txt"), filepath.Join(root, "a.txt2")) },
			func() error { return os.Rename(filepath.Join(root, "a.txt2"), filepath.Join(root, "a.txt")) }},
	}
	for _, c := range changes {
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := mustTree(t, root, TreeOptions{}).Digest; d == base {
			t.Errorf("%s: digest unchanged", c.name)
		}
		if err := c.undo(); err != nil {
			t.Fatalf("undo %s: %v", c.name, err)
		}
		if d := mustTree(t, root, TreeOptions{}).Digest; d != base {
			t.Errorf("undo %s: digest %s, want %s", c.name, d, base)
		}
	}
}

func relink(path, target string) error {
	if err := os.Remove(path); err != nil {
		return err
	}
	return os.Symlink(target, path)
}

// pnpmTree builds a pnpm-style node_modules: packages live once under
// .pnpm and are reached through directory links, and a workspace package
// outside node_modules is linked in.
func pnpmTree(t *testing.T) (proj, root string) {
	t.Helper()
	proj = t.TempDir()
	mkTree(t, proj,
		treeSpec{path: "packages/ws/package.json", content: `{"name":"ws"}`},
		treeSpec{path: "packages/ws/index.js", content: "module.exports = require('foo');\n"},
		treeSpec{path: "packages/ws/node_modules/foo", link: "../../../node_modules/.pnpm/foo@1.0.0/node_modules/foo"},
		treeSpec{path: "node_modules/.pnpm/foo@1.0.0/node_modules/foo/package.json", content: `{"name":"foo"}`},
		treeSpec{path: "node_modules/.pnpm/foo@1.0.0/node_modules/foo/index.js", content: "module.exports = require('bar');\n"},
		treeSpec{path: "node_modules/.pnpm/foo@1.0.0/node_modules/bar", link: "../../bar@2.0.0/node_modules/bar"},
		treeSpec{path: "node_modules/.pnpm/bar@2.0.0/node_modules/bar/index.js", content: "module.exports = 2;\n"},
		treeSpec{path: "node_modules/.pnpm/bar@2.0.0/node_modules/bar/bar.node", content: "\x7fELF", mode: 0o755},
		treeSpec{path: "node_modules/foo", link: ".pnpm/foo@1.0.0/node_modules/foo"},
		treeSpec{path: "node_modules/ws", link: "../packages/ws"},
	)
	return proj, filepath.Join(proj, "node_modules")
}

func TestTreeDigestPnpmLayout(t *testing.T) {
	t.Parallel()
	proj, root := pnpmTree(t)
	tr := mustTree(t, root, TreeOptions{KeepListing: true})
	// Four files under .pnpm, counted once each, and the workspace
	// package's two files under ws/.
	if tr.Files != 6 || tr.Hashed != 6 || tr.Symlinks != 4 {
		t.Errorf("files %d hashed %d symlinks %d, want 6 6 4\n%s", tr.Files, tr.Hashed, tr.Symlinks, tr.Listing)
	}
	for _, line := range []string{
		`l - ".pnpm/foo@1.0.0/node_modules/foo" foo` + "\n",
		`l - "../packages/ws" ws` + "\n",
		" ws/index.js\n",
		" ws/package.json\n",
		`l - "../../../node_modules/.pnpm/foo@1.0.0/node_modules/foo" ws/node_modules/foo` + "\n",
	} {
		if !strings.Contains(string(tr.Listing), line) {
			t.Errorf("listing lacks %q:\n%s", line, tr.Listing)
		}
	}
	if strings.Contains(string(tr.Listing), " foo/index.js") {
		t.Errorf("a link inside the tree was descended:\n%s", tr.Listing)
	}
	if len(tr.NativeAddons) != 1 || tr.NativeAddons[0].Path != ".pnpm/bar@2.0.0/node_modules/bar/bar.node" {
		t.Errorf("native addons %v", tr.NativeAddons)
	}

	// Pointing foo at another version changes the digest.
	mkTree(t, proj, treeSpec{path: "node_modules/.pnpm/foo@1.0.1/node_modules/foo/index.js", content: "module.exports = require('bar');\n"},
		treeSpec{path: "node_modules/.pnpm/foo@1.0.1/node_modules/foo/package.json", content: `{"name":"foo"}`})
	with := mustTree(t, root, TreeOptions{}).Digest
	if err := relink(filepath.Join(root, "foo"), ".pnpm/foo@1.0.1/node_modules/foo"); err != nil {
		t.Fatal(err)
	}
	if d := mustTree(t, root, TreeOptions{}).Digest; d == with {
		t.Errorf("retargeting node_modules/foo did not change the digest")
	}
}

func TestTreeDigestCycles(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	mkTree(t, base,
		treeSpec{path: "root/f", content: "f"},
		treeSpec{path: "root/dot", link: "."},
		treeSpec{path: "root/up", link: ".."},
		treeSpec{path: "root/slash", link: "/"},
		treeSpec{path: "root/self", link: "self"},
		treeSpec{path: "root/ping", link: "pong"},
		treeSpec{path: "root/pong", link: "ping"},
		treeSpec{path: "root/a", link: "../a"},
		treeSpec{path: "a/file", content: "a"},
		treeSpec{path: "a/b", link: "../b"},
		treeSpec{path: "b/file", content: "b"},
		treeSpec{path: "b/a", link: "../a"},
		treeSpec{path: "b/root", link: "../root"},
	)
	done := make(chan struct{})
	var tr Tree
	var err error
	go func() {
		defer close(done)
		tr, err = TreeDigest(root, TreeOptions{KeepListing: true})
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("TreeDigest did not finish on a tree with link cycles")
	}
	if err != nil {
		t.Fatal(err)
	}
	// root/f, root/a/file (outside a), root/a/b/file (outside b); b/a and
	// b/root lead back into directories being walked.
	want := "mcpepoch-tree-v1\n" +
		`l - "../a" a` + "\n" +
		`l - "../b" a/b` + "\n" +
		`l - "../a" a/b/a` + "\n" +
		"f - sha256:3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d a/b/file\n" +
		`l - "../root" a/b/root` + "\n" +
		"f - sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb a/file\n" +
		`l - "." dot` + "\n" +
		"f - sha256:252f10c83610ebca1a059c0bae8255eba2f95be4d1d7bcfa89d7248a82d9f111 f\n" +
		`l - "pong" ping` + "\n" +
		`l - "ping" pong` + "\n" +
		`l - "self" self` + "\n" +
		`l - "/" slash` + "\n" +
		`l - ".." up` + "\n"
	if string(tr.Listing) != want {
		t.Errorf("listing:\n%s\nwant:\n%s", tr.Listing, want)
	}
}

func TestTreeDigestOtherFilesAndSkip(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mkTree(t, root,
		treeSpec{path: "mod.py", content: "x = 1\n"},
		treeSpec{path: "__pycache__/mod.cpython-312.pyc", content: "junk"},
		treeSpec{path: "pkg/__pycache__/a.pyc", content: "junk"},
	)
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	skip := []string{"__pycache__"}
	tr := mustTree(t, root, TreeOptions{SkipDirs: skip, KeepListing: true})
	want := "mcpepoch-tree-v1\n" +
		"o - - fifo\n" +
		"f - sha256:" + strings.TrimPrefix(string(DigestBytes([]byte("x = 1\n"))), "sha256:") + " mod.py\n" +
		"d - - pkg\n"
	if string(tr.Listing) != want {
		t.Errorf("listing:\n%s\nwant:\n%s", tr.Listing, want)
	}
	// Bytecode the runtime writes does not change a skipping digest.
	mkTree(t, root, treeSpec{path: "__pycache__/other.pyc", content: "more"})
	if d := mustTree(t, root, TreeOptions{SkipDirs: skip}).Digest; d != tr.Digest {
		t.Errorf("a skipped directory changed the digest")
	}
	if d := mustTree(t, root, TreeOptions{}).Digest; d == tr.Digest {
		t.Errorf("without Skip the digest ignores __pycache__")
	}
}

func TestTreeDigestErrorsNamePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope")
	_, err := TreeDigest(missing, TreeOptions{})
	var pe *fs.PathError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), missing) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: error %v, want a path error naming %s", err, missing)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := TreeDigest(file, TreeOptions{}); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("file root: error %v, want one naming %s", err, file)
	}
}

func TestTreeDigestWorkersAgree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var specs []treeSpec
	for i := range 300 {
		specs = append(specs, treeSpec{
			path:    fmt.Sprintf("d%d/e%d/f%d.js", i%7, i%13, i),
			content: strings.Repeat(fmt.Sprint(i), i*37),
		})
	}
	mkTree(t, root, specs...)
	one := mustTree(t, root, TreeOptions{Workers: 1})
	for _, w := range []int{2, 5, 0} {
		tr := mustTree(t, root, TreeOptions{Workers: w})
		if tr.Digest != one.Digest || tr.Files != 300 || tr.Bytes != one.Bytes {
			t.Errorf("workers=%d: %s %d files %d bytes, want %s 300 %d", w, tr.Digest, tr.Files, tr.Bytes, one.Digest, one.Bytes)
		}
	}
}
