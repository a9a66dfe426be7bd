package build

import (
	"errors"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// codePaths returns the paths of id's code artifacts.
func codePaths(id *Identity) []string {
	var out []string
	for _, a := range id.Code {
		out = append(out, a.Path)
	}
	return out
}

// The entry and code the launch command leads to, for the runtimes whose
// options are understood, with fake runtimes that are never run.
func TestCodeInferred(t *testing.T) {
	t.Parallel()
	files := []idFile{
		{path: "dist/server.js", content: "require('./lib/tool');\n"},
		{path: "dist/lib/tool.js", content: "module.exports = 1;\n"},
		{path: "dist/index.js", content: "require('./server');\n"},
		{path: "preload.cjs", content: "globalThis.x = 1;\n"},
		{path: "server.js", content: "console.log(1);\n"},
		{path: "pkg/__init__.py", content: ""},
		{path: "pkg/server/__init__.py", content: ""},
		{path: "pkg/server/__main__.py", content: "print(1)\n"},
		{path: "pkg/server/tools.py", content: "X = 1\n"},
		{path: "scripts/serve.py", content: "print(1)\n"},
		{path: "src/server.ts", content: "import './lib/tool.js';\n"},
		{path: "src/lib/tool.ts", content: "export {};\n"},
		{path: "go.mod", content: "module example.com/srv\n"},
		{path: "cmd/srv/main.go", content: "package main\nfunc main() {}\n"},
		{path: "packages/api/package.json", content: "{}\n"},
		{path: "packages/api/dist/main.js", content: "1;\n"},
		{path: "packages/web/dist/main.js", content: "2;\n"},
		{path: ".cache/hook.cjs", content: "3;\n"},
		{path: "server.rb", content: "puts 1\n"},
		{path: "bin/srv", content: "\x7fELF srv\n", mode: 0o755},
	}
	for _, tc := range []struct {
		name    string
		command []string
		entry   string
		code    []string
		source  string // substring of Identity.Source; empty: not from source
	}{
		// A script's code is the whole project (projectCode): node can
		// import ../lib/x.mjs, Python anything on a sys.path it extends.
		{"node script", []string{"node", "dist/server.js"}, "dist/server.js", []string{"."}, ""},
		{"node preload", []string{"node", "-r", "./preload.cjs", "--title", "x", "dist/server.js"}, "dist/server.js", []string{"."}, ""},
		{"node --require=", []string{"node", "--require=./preload.cjs", "dist/server.js"}, "dist/server.js", []string{"."}, ""},
		{"node preload inside the tree", []string{"node", "--import", "./dist/lib/tool.js", "dist/server.js"}, "dist/server.js", []string{"."}, ""},
		{"node preload the tree leaves out", []string{"node", "-r", "./.cache/hook.cjs", "dist/server.js"}, "dist/server.js", []string{".", ".cache/hook.cjs"}, ""},
		{"node without extension", []string{"node", "dist/server"}, "dist/server.js", []string{"."}, ""},
		{"node directory", []string{"node", "dist"}, "dist/index.js", []string{"."}, ""},
		{"node in the root", []string{"node", "server.js"}, "server.js", []string{"."}, ""},
		{"package below the root", []string{"node", "packages/api/dist/main.js"}, "packages/api/dist/main.js", []string{"."}, ""},
		{"no package.json", []string{"node", "packages/web/dist/main.js"}, "packages/web/dist/main.js", []string{"."}, ""},
		{"python -m", []string{"python3", "-u", "-m", "pkg.server"}, "pkg/server/__main__.py", []string{"."}, ""},
		{"python package file", []string{"python3", "-X", "dev", "pkg/server/tools.py"}, "pkg/server/tools.py", []string{"."}, ""},
		{"python script directory", []string{"python3", "scripts/serve.py"}, "scripts/serve.py", []string{"."}, ""},
		{"bun from source", []string{"bun", "run", "src/server.ts"}, "src/server.ts", []string{"."}, "runs from source (src/server.ts): the project's source files are hashed"},
		{"node type stripping", []string{"node", "--experimental-strip-types", "src/server.ts"}, "src/server.ts", []string{"."}, "runs from source"},
		{"another runtime", []string{"ruby", "server.rb"}, "server.rb", []string{"."}, ""},
		{"a launcher of a compiled program", []string{"valgrind", "bin/srv"}, "bin/srv", nil, ""},
		{"go run", []string{"go", "run", "-tags", "x", "./cmd/srv"}, "", []string{"."}, "runs from source (go run ./cmd/srv): the module ."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := idTempDir(t)
			idWrite(t, dir, files...)
			bin := idFakeBin(t, "a", "python3", "bun", "go", "ruby", "valgrind")
			id, err := Compute(Spec{Dir: dir, Command: tc.command, Versions: idVersions, Environ: []string{"PATH=" + bin}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.entry != "" && id.Entry.Path != tc.entry {
				t.Errorf("entry %s, want %s\ninferred: %q", id.Entry.Path, tc.entry, id.Inferred)
			}
			if got := codePaths(id); !slices.Equal(got, tc.code) {
				t.Errorf("code %q, want %q\ninferred: %q", got, tc.code, id.Inferred)
			}
			if tc.source == "" && id.Source != "" || !strings.Contains(id.Source, tc.source) {
				t.Errorf("source %q, want %q", id.Source, tc.source)
			}
		})
	}
}

// A launch command naming a script that does not exist is an error naming
// the file, not an identity of the runtime alone; a failed build records it
// as missing, and so does the host before the first build (Unbuilt).
func TestCodeMissingScript(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "preload.cjs", content: "1;\n"}, idFile{path: "dist/server.js", content: "1;\n"})
	bin := idFakeBin(t, "a", "python3")
	for _, command := range [][]string{
		{"node", "dist/missing.js"},
		{"node", "-r", "./gone.cjs", "dist/server.js"},
		{"python3", "-m", "json", "-u"}, // not found in the project: resolved on sys.path, not an error
		{"sh", "-c", "exec node build/server.js"},
		{"./tsx", "src/missing.ts"},
	} {
		idWrite(t, dir, idFile{path: "tsx", content: "#!/bin/sh\nexec node \"$@\"\n", mode: 0o755})
		spec := Spec{Dir: dir, Command: command, Versions: idVersions, Environ: []string{"PATH=" + bin + ":/bin:/usr/bin"}}
		_, err := Compute(spec)
		var ie *InputError
		if command[0] == "python3" {
			if err != nil {
				t.Errorf("%q: %v", command, err)
			}
			continue
		}
		if !errors.As(err, &ie) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: err %v, want an *InputError for a missing file", command, err)
			continue
		}
		spec.Unbuilt = true
		id, err := Compute(spec)
		if err != nil {
			t.Errorf("%q, Unbuilt: %v", command, err)
			continue
		}
		if !slices.ContainsFunc(id.Artifacts(), func(a Artifact) bool { return a.Missing && a.Path == ie.Path }) {
			t.Errorf("%q, Unbuilt: %s not recorded as missing: %+v", command, ie.Path, id.Artifacts())
		}
	}
}

// A binary the build has not written yet is the entry, recorded missing,
// and no code tree: once built it is a compiled executable, which has
// none. What changes with the first build is the binary, and nothing is
// "gone" that did not exist before either.
func TestCodeUnbuiltBinaryFirstBuild(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	spec := Spec{Dir: dir, Command: []string{"bin/app", "--stdio"}, Versions: idVersions, Unbuilt: true, Environ: []string{"PATH=/bin:/usr/bin"}}
	before := idCompute(t, spec)
	if len(before.Code) != 0 || !before.Entry.Missing {
		t.Errorf("before the build: entry %+v, code %+v; want the entry missing and no code tree", before.Entry, before.Code)
	}
	idWrite(t, dir, idFile{path: "bin/app", content: "\x7fELF fake app\n", mode: 0o755})
	idWantChanges(t, before, idCompute(t, spec), "bin/app")
}

// An input absent before and not tracked now, or the other way round, is
// no change: nothing ran from it either time.
func TestChangesAbsentIsNotGone(t *testing.T) {
	t.Parallel()
	entry := Artifact{Role: RoleEntry, Path: "bin/app", Digest: "sha256:aa"}
	prev := &Identity{Entry: entry, Code: []Artifact{{Role: RoleCode, Path: "bin", Missing: true}}}
	next := &Identity{Entry: entry}
	idWantChanges(t, prev, next)
	idWantChanges(t, next, prev)
	next.Code = []Artifact{{Role: RoleCode, Path: "lib", Digest: "sha256:bb"}}
	idWantChanges(t, prev, next, "lib")
	idWantChanges(t, next, prev, "lib (gone)")
}

// The code of a script entry is the whole project tree, wherever the
// entry lies (projectCode): node src/server.mjs imports ../lib/x.mjs,
// Python imports a namespace package (no __init__.py) from a directory on
// its path. For a runtime whose language is known, only the files it
// loads as code are listed, so the server's own data (and a directory it
// makes for it) is no input; for another runtime every file is.
func TestProjectCodeWholeTree(t *testing.T) {
	t.Parallel()
	files := []idFile{
		{path: "src/server.mjs", content: "import '../lib/x.mjs';\n"},
		{path: "lib/x.mjs", content: "export const x = 1;\n"},
		{path: "app/main.py", content: "import ns.mod\n"},
		{path: "srv.py", content: "import ns.mod\n"},
		{path: "ns/mod.py", content: "X = 1\n"},
		{path: "server.rb", content: "puts 1\n"},
		{path: "data/state.json", content: "{\"n\": 1}\n"},
	}
	for _, tc := range []struct {
		command  []string
		changes  []string // files whose edit changes the identity
		constant []string // files whose edit does not
	}{
		// lib/x: a file with no extension, which node's require("./lib/x")
		// loads before lib/x.js (and as JavaScript): code to node, not to
		// Python.
		{[]string{"node", "src/server.mjs"}, []string{"lib/x.mjs", "lib/x"}, []string{"ns/mod.py", "data/state.json", "new/dir/of/data.json"}},
		{[]string{"python3", "app/main.py"}, []string{"ns/mod.py"}, []string{"lib/x.mjs", "lib/x", "data/state.json", "new/dir/of/data.json"}},
		{[]string{"python3", "srv.py"}, []string{"ns/mod.py"}, []string{"lib/x.mjs", "data/state.json", "new/dir/of/data.json"}},
		{[]string{"ruby", "server.rb"}, []string{"lib/x.mjs", "ns/mod.py", "data/state.json"}, nil},
	} {
		t.Run(strings.Join(tc.command, " "), func(t *testing.T) {
			t.Parallel()
			dir := idTempDir(t)
			idWrite(t, dir, files...)
			spec := Spec{Dir: dir, Command: tc.command, Versions: idVersions, Environ: []string{"PATH=" + idFakeBin(t, "a", "python3", "ruby")}}
			prev := idCompute(t, spec)
			if !slices.ContainsFunc(prev.Code, func(a Artifact) bool {
				return a.Path == "." && strings.Contains(a.Why, "the project the entry lies in")
			}) {
				t.Fatalf("code %+v, want the project tree with why it is hashed", prev.Code)
			}
			for _, f := range tc.constant {
				idWrite(t, dir, idFile{path: f, content: "edited " + f + "\n"})
				next := idCompute(t, spec)
				idWantChanges(t, prev, next)
				prev = next
			}
			for _, f := range tc.changes {
				idWrite(t, dir, idFile{path: f, content: "edited again " + f + "\n"})
				next := idCompute(t, spec)
				idWantChanges(t, prev, next, ".")
				prev = next
			}
		})
	}
}

// A node_modules linked to a shared install is a dependency tree, hashed
// as such (and one inside the project's code is found as well), never
// walked again as part of the project tree: a change there is named as
// the dependency tree alone.
func TestProjectCodeLinkedDeps(t *testing.T) {
	t.Parallel()
	dir, shared, nested := idTempDir(t), idTempDir(t), idTempDir(t)
	idWrite(t, shared, idFile{path: "foo/index.js", content: "module.exports = 1;\n"})
	idWrite(t, nested, idFile{path: "bar/index.js", content: "module.exports = 2;\n"})
	idWrite(t, dir,
		idFile{path: "server.js", content: "require('foo');\n"},
		idFile{path: "node_modules", link: shared},
		idFile{path: "lib/node_modules", link: nested},
		idFile{path: "lib/x.js", content: "require('bar');\n"},
	)
	spec := Spec{Dir: dir, Command: []string{"node", "server.js"}, Versions: idVersions, Environ: []string{"PATH=" + idFakeBin(t, "a")}}
	prev := idCompute(t, spec)
	if got := codePaths(prev); !slices.Equal(got, []string{"."}) || prev.Code[0].Files != 1 {
		t.Fatalf("code %q (%+v), want the project tree with lib/x.js alone", got, prev.Code)
	}
	idWrite(t, shared, idFile{path: "foo/index.js", content: "module.exports = 'one';\n"})
	next := idCompute(t, spec)
	idWantChanges(t, prev, next, "node_modules")
	idWrite(t, nested, idFile{path: "bar/index.js", content: "module.exports = 'two';\n"})
	idWantChanges(t, next, idCompute(t, spec), "lib/node_modules")
}

// node loads .ts modules when its version strips types by default, or an
// option asks it to: then they are in a node entry's project tree, else
// a saved TypeScript source is no change of what runs.
func TestNodeStripsTypes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		args    []string
		env     string
		want    bool
	}{
		{"v20.20.2", nil, "", false},
		{"v22.17.0", nil, "", false},
		{"v22.17.0", []string{"--experimental-strip-types", "dist/server.js"}, "", true},
		{"v22.17.0", nil, "--experimental-transform-types", true},
		{"v22.5.0", []string{"--experimental-strip-types", "dist/server.js"}, "", false},
		{"v22.18.0", nil, "", true},
		{"v23.5.0", nil, "", false},
		{"v23.6.0", nil, "", true},
		{"v24.1.0", []string{"--no-experimental-strip-types", "dist/server.js"}, "", false},
		{"v24.1.0", []string{"dist/server.js", "--no-experimental-strip-types"}, "", true}, // the server's own argument
		{"", nil, "", true}, // unknown: fail closed
	} {
		spec := Spec{Environ: []string{"PATH=/bin"}}
		if tc.env != "" {
			spec.Environ = append(spec.Environ, "NODE_OPTIONS="+tc.env)
		}
		if got := nodeStripsTypes(spec, launchArgs{args: tc.args}, tc.version); got != tc.want {
			t.Errorf("node %s %q NODE_OPTIONS=%q: strips types %v, want %v", tc.version, tc.args, tc.env, got, tc.want)
		}
	}
}

// The runtime that runs decides what is code, not the entry setting: a
// node server whose entry setting names a .py file, a compiled file or a
// file in node_modules still has the whole project as node code. A
// preloaded module (-r) may hook the loader to load files of any
// extension (ts-node, @babel/register, coffeescript): every file is code
// then.
func TestProjectCodeFromTheRuntime(t *testing.T) {
	t.Parallel()
	files := []idFile{
		{path: "server.js", content: "require('./lib/impl');\n"},
		{path: "lib/impl.js", content: "module.exports = 1;\n"},
		{path: "lib/impl.coffee", content: "x = 1\n"},
		{path: "x.py", content: ""},
		{path: "node_modules/x.js", content: ""},
		{path: "bin/tool", content: "\x7fELF tool\n", mode: 0o755},
	}
	for _, tc := range []struct {
		name    string
		entry   string
		command []string
		changes []string // files whose edit changes the identity's code
		same    []string // files whose edit does not
	}{
		{"no entry setting", "", []string{"node", "server.js"}, []string{"lib/impl.js"}, []string{"lib/impl.coffee"}},
		{"entry a .py file", "x.py", []string{"node", "server.js"}, []string{"lib/impl.js"}, nil},
		{"entry in node_modules", "node_modules/x.js", []string{"node", "server.js"}, []string{"lib/impl.js"}, nil},
		{"entry a compiled file", "bin/tool", []string{"node", "server.js"}, []string{"lib/impl.js"}, nil},
		{"a preload", "", []string{"node", "-r", "coffeescript/register", "server.js"}, []string{"lib/impl.js", "lib/impl.coffee"}, nil},
		// A runtime mcpepoch does not know: every file is code, and an
		// entry setting in a dependency tree takes none of it out.
		{"another runtime, entry in node_modules", "node_modules/x.js", []string{"ruby", "server.js"}, []string{"lib/impl.js", "lib/impl.coffee"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := idTempDir(t)
			idWrite(t, dir, files...)
			spec := Spec{Dir: dir, Command: tc.command, Entry: tc.entry, Versions: idVersions, Environ: []string{"PATH=" + idFakeBin(t, "a", "node", "ruby")}}
			prev := idCompute(t, spec)
			for _, f := range tc.same {
				idWrite(t, dir, idFile{path: f, content: "edited " + f + "\n"})
				next := idCompute(t, spec)
				idWantChanges(t, prev, next)
				prev = next
			}
			for _, f := range tc.changes {
				idWrite(t, dir, idFile{path: f, content: "edited again " + f + "\n"})
				next := idCompute(t, spec)
				if c := Changes(prev, next); !slices.Contains(c, ".") {
					t.Errorf("editing %s changed %q, want the project tree", f, c)
				}
				prev = next
			}
		})
	}
}
