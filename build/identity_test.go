package build

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// idFile is one file of a test project: content, or a symbolic link when
// link is set. mode 0 means 0o644.
type idFile struct {
	path    string
	content string
	link    string
	mode    fs.FileMode
}

// idWrite creates files under dir, with their parent directories,
// replacing what is there.
func idWrite(t testing.TB, dir string, files ...idFile) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if f.link != "" {
			os.Remove(p)
			if err := os.Symlink(f.link, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mode := f.mode
		if mode == 0 {
			mode = 0o644
		}
		if err := os.WriteFile(p, []byte(f.content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// idRewrite replaces the content of an existing file with content of the
// same length and puts its mtime back, as tar, rsync -t or touch -r do: only
// the ctime and the content tell that it changed.
func idRewrite(t *testing.T, p, content string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(content)) != fi.Size() {
		t.Fatalf("idRewrite %s: %d bytes, the file has %d", p, len(content), fi.Size())
	}
	if err := os.WriteFile(p, []byte(content), fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// idTempDir returns a new temporary directory with symbolic links in its
// path resolved (macOS's /var is a link), so paths compare with what
// Compute resolves.
func idTempDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// idFakeBin returns a directory holding an executable named node (and the
// other names given) that is not a script: Compute hashes it as a runtime
// and, with idVersions, never runs it. tag makes its bytes differ from
// other fake binaries.
func idFakeBin(t *testing.T, tag string, names ...string) string {
	t.Helper()
	bin := idTempDir(t)
	for _, n := range append([]string{"node"}, names...) {
		idWrite(t, bin, idFile{path: n, content: "\x7fELF fake " + n + " " + tag + "\n", mode: 0o755})
	}
	return bin
}

// idVersions answers every runtime version question, so no fake runtime is
// ever run.
func idVersions(Digest) (string, bool) { return "v0.0.0-test", true }

// idNodeProject writes a Node-shaped project: an entry, a lockfile and a
// node_modules tree with a nested package.
func idNodeProject(t *testing.T) string {
	t.Helper()
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "dist/server.js", content: "require('foo');\n"},
		idFile{path: "package-lock.json", content: `{"lockfileVersion":3}` + "\n"},
		idFile{path: "node_modules/foo/package.json", content: `{"name":"foo","version":"1.0.0"}` + "\n"},
		idFile{path: "node_modules/foo/index.js", content: "module.exports = require('bar');\n"},
		idFile{path: "node_modules/bar/index.js", content: "module.exports = 1;\n"},
		idFile{path: "node_modules/.bin/foo", link: "../foo/index.js"},
	)
	return dir
}

// idSpec is the Spec of a node project whose runtime is in bin and whose
// environment is exactly PATH=bin plus env.
func idSpec(dir, bin string, env ...string) Spec {
	return Spec{Dir: dir, Command: []string{"node", "dist/server.js"}, Versions: idVersions,
		Environ: append([]string{"PATH=" + bin}, env...)}
}

func idCompute(t *testing.T, spec Spec) *Identity {
	t.Helper()
	id, err := Compute(spec)
	if err != nil {
		t.Fatalf("Compute(%+v): %v", spec, err)
	}
	return id
}

// idWantChanges fails unless Changes(prev, next) is exactly want.
func idWantChanges(t *testing.T, prev, next *Identity, want ...string) {
	t.Helper()
	got := Changes(prev, next)
	if !slices.Equal(got, want) {
		t.Errorf("changes %q, want %q", got, want)
	}
}

// idAge waits until files written before the call are old enough for the
// stat caches to trust them (racyWindow).
func idAge() { time.Sleep(racyWindow + 200*time.Millisecond) }

func TestIdentityDepsTreeChange(t *testing.T) {
	for _, cached := range []bool{false, true} {
		name := "no cache"
		if cached {
			name = "stat cache"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := idNodeProject(t)
			bin := idFakeBin(t, "a")
			spec := idSpec(dir, bin)
			if cached {
				spec.CacheDir = filepath.Join(dir, ".mcpepoch", "cache")
				idCompute(t, spec) // records the caches
				idAge()            // so that the next call trusts them
			}
			before := idCompute(t, spec)
			if len(before.Deps) != 1 || before.Deps[0].Path != "node_modules" || before.Deps[0].Files != 3 {
				t.Fatalf("deps %+v, want node_modules with 3 files", before.Deps)
			}
			if !slices.ContainsFunc(before.Lockfiles, func(a Artifact) bool { return a.Path == "package-lock.json" }) {
				t.Fatalf("lockfiles %+v lack package-lock.json", before.Lockfiles)
			}
			if cached {
				again := idCompute(t, spec)
				idWantChanges(t, before, again)
				ents, _ := os.ReadDir(spec.CacheDir)
				if len(ents) < 2 {
					t.Errorf("cache dir holds %d files, want the file cache and a tree cache", len(ents))
				}
			}

			// Same entry, same lockfile; one dependency edited in place.
			idRewrite(t, filepath.Join(dir, "node_modules/bar/index.js"), "module.exports = 2;\n")
			after := idCompute(t, spec)
			idWantChanges(t, before, after, "node_modules")
			if after.Deps[0].Digest == before.Deps[0].Digest {
				t.Errorf("deps digest unchanged after an edit inside node_modules")
			}
			if after.Entry.Digest != before.Entry.Digest || after.LockfileDigest() != before.LockfileDigest() {
				t.Errorf("entry or lockfile digest moved though neither file changed")
			}

			// What is cached agrees with reading everything again.
			spec.Rehash = true
			if fresh := idCompute(t, spec); fresh.Deps[0].Digest != after.Deps[0].Digest {
				t.Errorf("rehash gives deps %s, cached call %s", fresh.Deps[0].Digest, after.Deps[0].Digest)
			}
		})
	}
}

func TestIdentityDepsAddedFileAndExplicitRoots(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	bin := idFakeBin(t, "a")
	spec := idSpec(dir, bin)
	before := idCompute(t, spec)
	idWrite(t, dir, idFile{path: "node_modules/foo/extra.js", content: "x\n"})
	idWantChanges(t, before, idCompute(t, spec), "node_modules")

	// Deps named explicitly replace the detected ones. (The node_modules
	// inside a code tree is one the runtime resolves from whatever deps
	// says: the code is named so that the root's is not inside it.)
	idWrite(t, dir, idFile{path: "vendor/lib/a.js", content: "a\n"})
	spec.Deps = []string{"vendor"}
	spec.Code = []string{"dist"}
	id := idCompute(t, spec)
	if len(id.Deps) != 1 || id.Deps[0].Path != "vendor" || id.Deps[0].Files != 1 {
		t.Fatalf("deps %+v, want vendor only", id.Deps)
	}
	spec.Deps = []string{"missing-dir"}
	var ie *InputError
	if _, err := Compute(spec); !errors.As(err, &ie) || ie.Field != "deps" || ie.Path != "missing-dir" {
		t.Errorf("a named tree that does not exist: %v, want an *InputError for deps missing-dir", err)
	}
}

// pnpm's layout: packages live once under node_modules/.pnpm and are
// reached through directory links.
func idPnpmProject(t *testing.T) string {
	t.Helper()
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "dist/server.js", content: "require('foo');\n"},
		idFile{path: "pnpm-lock.yaml", content: "lockfileVersion: '9.0'\n"},
		idFile{path: "node_modules/.pnpm/foo@1.0.0/node_modules/foo/package.json", content: `{"name":"foo","version":"1.0.0"}`},
		idFile{path: "node_modules/.pnpm/foo@1.0.0/node_modules/foo/index.js", content: "module.exports = require('bar');\n"},
		idFile{path: "node_modules/.pnpm/foo@1.0.0/node_modules/bar", link: "../../bar@2.0.0/node_modules/bar"},
		idFile{path: "node_modules/.pnpm/foo@2.0.0/node_modules/foo/package.json", content: `{"name":"foo","version":"2.0.0"}`},
		idFile{path: "node_modules/.pnpm/foo@2.0.0/node_modules/foo/index.js", content: "module.exports = 'two';\n"},
		idFile{path: "node_modules/.pnpm/bar@2.0.0/node_modules/bar/index.js", content: "module.exports = 2;\n"},
		idFile{path: "node_modules/.pnpm/node_modules/bar", link: "../bar@2.0.0/node_modules/bar"},
		idFile{path: "node_modules/foo", link: ".pnpm/foo@1.0.0/node_modules/foo"},
		idFile{path: "node_modules/.bin/foo", link: "../foo/index.js"},
		idFile{path: "node_modules/gone", link: ".pnpm/gone@1.0.0/node_modules/gone"}, // broken: not an error
	)
	return dir
}

func TestIdentityPnpmSymlinks(t *testing.T) {
	for _, cached := range []bool{false, true} {
		name := "no cache"
		if cached {
			name = "stat cache"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := idPnpmProject(t)
			spec := idSpec(dir, idFakeBin(t, "a"))
			if cached {
				spec.CacheDir = filepath.Join(dir, ".mcpepoch", "cache")
				idCompute(t, spec)
				idAge()
			}
			before := idCompute(t, spec)
			if len(before.Deps) != 1 || before.Deps[0].Digest == "" {
				t.Fatalf("deps %+v, want one digested tree", before.Deps)
			}
			// Each file under .pnpm once, however many links reach it.
			if before.Deps[0].Files != 5 {
				t.Errorf("deps hold %d files, want the 5 under .pnpm", before.Deps[0].Files)
			}
			idWantChanges(t, before, idCompute(t, spec))

			// node_modules/foo → foo@2.0.0: no file changed, the link did.
			idWrite(t, dir, idFile{path: "node_modules/foo", link: ".pnpm/foo@2.0.0/node_modules/foo"})
			after := idCompute(t, spec)
			idWantChanges(t, before, after, "node_modules")

			// And back: the digest is of what the links point at now.
			idWrite(t, dir, idFile{path: "node_modules/foo", link: ".pnpm/foo@1.0.0/node_modules/foo"})
			if back := idCompute(t, spec); back.Deps[0].Digest != before.Deps[0].Digest {
				t.Errorf("link put back: deps %s, want the first digest %s", back.Deps[0].Digest, before.Deps[0].Digest)
			}
		})
	}
}

func TestIdentityPnpmWorkspaceLinkOutsideTree(t *testing.T) {
	t.Parallel()
	dir := idPnpmProject(t)
	idWrite(t, dir,
		idFile{path: "packages/ws/index.js", content: "module.exports = 'ws';\n"},
		idFile{path: "node_modules/ws", link: "../packages/ws"},
	)
	spec := idSpec(dir, idFakeBin(t, "a"))
	before := idCompute(t, spec)
	// The workspace package lies outside node_modules; the runtime loads
	// it through the link, so its content counts, in the dependency tree
	// and in the project tree, the code of a script entry.
	idRewrite(t, filepath.Join(dir, "packages/ws/index.js"), "module.exports = 'WS';\n")
	idWantChanges(t, before, idCompute(t, spec), ".", "node_modules")
}

func TestIdentityNodeOptions(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	bin := idFakeBin(t, "a")
	cache := filepath.Join(dir, ".mcpepoch", "cache")
	// The preload lies outside the project, whose files the code tree
	// lists by name.
	outside := idTempDir(t)
	value := "--require " + filepath.Join(outside, "preload-5b1e9c.cjs")
	idWrite(t, outside, idFile{path: "preload-5b1e9c.cjs", content: "globalThis.x = 1;\n"})

	spec := idSpec(dir, bin)
	spec.CacheDir = cache
	without := idCompute(t, spec)
	if slices.ContainsFunc(without.Env, func(a Artifact) bool { return a.Path == "NODE_OPTIONS" }) {
		t.Fatalf("unset NODE_OPTIONS recorded: %+v", without.Env)
	}

	spec = idSpec(dir, bin, "NODE_OPTIONS="+value, "API_TOKEN=not-a-redirect-7c2d")
	spec.CacheDir = cache
	with := idCompute(t, spec)
	// A preload may hook the loader: every file of the project is code
	// then (hooksLoader), so the tree changes too.
	idWantChanges(t, without, with, ".", "$NODE_OPTIONS")
	i := slices.IndexFunc(with.Env, func(a Artifact) bool { return a.Path == "NODE_OPTIONS" })
	if i < 0 {
		t.Fatalf("NODE_OPTIONS not recorded: %+v", with.Env)
	}
	a := with.Env[i]
	if a.Role != RoleEnv || a.Digest != DigestBytes(envFilesInput(value, []string{filepath.Join(outside, "preload-5b1e9c.cjs")})) || a.Missing {
		t.Errorf("NODE_OPTIONS artifact %+v, want role env and the digest of the value and the file it names", a)
	}
	if a.Size != 0 {
		t.Errorf("NODE_OPTIONS artifact has size %d: even a length says something of a value", a.Size)
	}
	if slices.ContainsFunc(with.Env, func(a Artifact) bool { return a.Path == "API_TOKEN" }) {
		t.Errorf("a variable neither redirecting nor named in env was recorded: %+v", with.Env)
	}

	// Another value is another identity; the same value is the same.
	spec.Environ = []string{"PATH=" + bin, "NODE_OPTIONS=--require ./other.cjs"}
	other := idCompute(t, spec)
	idWantChanges(t, with, other, "$NODE_OPTIONS")
	spec.Environ = []string{"PATH=" + bin, "NODE_OPTIONS=" + value}
	idWantChanges(t, with, idCompute(t, spec))

	// The value is nowhere: not in the identity as JSON, not in the caches.
	b, err := json.Marshal(with)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{value, "preload-5b1e9c", "not-a-redirect-7c2d"} {
		if bytes.Contains(b, []byte(leak)) {
			t.Errorf("identity JSON holds %q:\n%s", leak, b)
		}
		idGrepTree(t, cache, leak)
	}
}

// idGrepTree fails the test if any regular file under root contains s.
func idGrepTree(t *testing.T, root, s string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s holds %q", p, s)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no file under %s to look into", root)
	}
}

func TestIdentityEnvFiles(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	idWrite(t, dir, idFile{path: ".env", content: "INVENTORY_MODE=staging\n"})
	bin := idFakeBin(t, "a")

	// Named in env_files: its content is part of the identity.
	named := idSpec(dir, bin)
	named.EnvFiles = []string{".env"}
	before := idCompute(t, named)
	if len(before.EnvFiles) != 1 || before.EnvFiles[0].Path != ".env" || before.EnvFiles[0].Role != RoleEnvFile ||
		before.EnvFiles[0].Digest != DigestBytes([]byte("INVENTORY_MODE=staging\n")) {
		t.Fatalf("env files %+v, want .env with its digest", before.EnvFiles)
	}
	unnamed := idSpec(dir, bin)
	beforeUnnamed := idCompute(t, unnamed)
	if len(beforeUnnamed.EnvFiles) != 0 {
		t.Fatalf("env files %+v recorded though none is named", beforeUnnamed.EnvFiles)
	}

	idRewrite(t, filepath.Join(dir, ".env"), "INVENTORY_MODE=product\n")
	idWantChanges(t, before, idCompute(t, named), ".env")
	idWantChanges(t, beforeUnnamed, idCompute(t, unnamed))

	// A named file that is absent is recorded as missing, not an error, and
	// its appearance is a change.
	named.EnvFiles = []string{".env", ".env.local"}
	absent := idCompute(t, named)
	if len(absent.EnvFiles) != 2 || !absent.EnvFiles[1].Missing || absent.EnvFiles[1].Path != ".env.local" {
		t.Fatalf("env files %+v, want .env.local missing", absent.EnvFiles)
	}
	idWrite(t, dir, idFile{path: ".env.local", content: "X=1\n"})
	idWantChanges(t, absent, idCompute(t, named), ".env.local")
}

func TestIdentityEnvNamed(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	bin := idFakeBin(t, "a")
	spec := idSpec(dir, bin)
	spec.EnvNames = []string{"INVENTORY_MODE"}
	unset := idCompute(t, spec)
	i := slices.IndexFunc(unset.Env, func(a Artifact) bool { return a.Path == "INVENTORY_MODE" })
	if i < 0 || !unset.Env[i].Missing {
		t.Fatalf("env %+v, want INVENTORY_MODE missing", unset.Env)
	}
	spec.Environ = append(spec.Environ, "INVENTORY_MODE=")
	empty := idCompute(t, spec)
	idWantChanges(t, unset, empty, "$INVENTORY_MODE")          // empty is not unset
	spec.Environ = append(spec.Environ, "INVENTORY_MODE=live") // the last one counts, as for a process
	idWantChanges(t, empty, idCompute(t, spec), "$INVENTORY_MODE")
}

func TestIdentityCommandNotFound(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	spec := idSpec(dir, idFakeBin(t, "a"))
	spec.Command = []string{"no-such-runtime-3f9", "dist/server.js"}
	_, err := Compute(spec)
	var ie *InputError
	if !errors.As(err, &ie) || ie.Field != "command" || ie.Path != "no-such-runtime-3f9" || !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("error %v, want an *InputError for command no-such-runtime-3f9 wrapping exec.ErrNotFound", err)
	}
	// exec.ErrNotFound already says "in $PATH".
	if strings.Count(err.Error(), "PATH") != 1 {
		t.Errorf("error %q says PATH more than once", err)
	}
}

// A file swapped and put back between two identities has the same digest
// but another stamp: Touched names it (an entry, and a file of a tree
// walked through the host's in-memory caches), and Changes does not.
func TestIdentityTouched(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	idWrite(t, dir, idFile{path: "lib/x.js", content: "module.exports = 1;\n"})
	spec := idSpec(dir, idFakeBin(t, "a"))
	spec.Caches = NewCaches()
	prev := idCompute(t, spec)
	if got := Touched(prev, idCompute(t, spec)); len(got) != 0 {
		t.Fatalf("nothing touched: Touched = %q", got)
	}
	swap := func(rel string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.Rename(p, p+".orig"); err != nil {
			t.Fatal(err)
		}
		idWrite(t, dir, idFile{path: rel, content: "evil();\n"})
		if err := os.Rename(p+".orig", p); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond) // a ctime of its own
	swap("dist/server.js")
	swap("lib/x.js")
	next := idCompute(t, spec)
	idWantChanges(t, prev, next)
	if got := Touched(prev, next); !slices.Equal(got, []string{"dist/server.js", "."}) {
		t.Errorf("Touched = %q, want the entry and the project tree", got)
	}
}

// A file made and removed beside the code (a server's own temporary
// file), which changes a directory's ctime and no code, is not a touch.
func TestIdentityTouchedNotByDirectory(t *testing.T) {
	t.Parallel()
	dir := idNodeProject(t)
	idWrite(t, dir, idFile{path: "lib/x.js", content: "module.exports = 1;\n"})
	spec := idSpec(dir, idFakeBin(t, "a"))
	spec.Caches = NewCaches()
	prev := idCompute(t, spec)
	time.Sleep(10 * time.Millisecond)
	idWrite(t, dir, idFile{path: "lib/state.json.tmp", content: "{}\n"})
	if err := os.Rename(filepath.Join(dir, "lib/state.json.tmp"), filepath.Join(dir, "lib/state.json")); err != nil {
		t.Fatal(err)
	}
	next := idCompute(t, spec)
	idWantChanges(t, prev, next)
	if got := Touched(prev, next); len(got) != 0 {
		t.Errorf("Touched = %q after a data file was written beside the code", got)
	}
}

// Changes names an input that left one role but is still hashed in
// another as no longer in that role, not as gone; one hashed nowhere any
// more is gone.
func TestChangesRoleLeft(t *testing.T) {
	d := Digest("sha256:" + strings.Repeat("a", 64))
	prev := &Identity{Entry: Artifact{Role: RoleEntry, Path: "state.db", Digest: d},
		Lockfiles: []Artifact{{Role: RoleLockfile, Path: "go.sum", Digest: d}}}
	next := &Identity{Entry: Artifact{Role: RoleEntry, Path: "bin/server", Digest: d},
		Args: []Artifact{{Role: RoleArg, Path: "state.db", Digest: d}}}
	got := Changes(prev, next)
	want := []string{"bin/server", "state.db", "state.db (no longer its entry)", "go.sum (gone)"}
	if !slices.Equal(got, want) {
		t.Errorf("Changes = %q, want %q", got, want)
	}
}
