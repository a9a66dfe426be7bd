package build

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// npm start is followed through package.json's scripts.start to the node
// command it runs: server.mjs is the entry, package.json a wrapper, and
// the command line is in Runs; a script with shell syntax makes the whole
// project code.
func TestPackageScriptFollowed(t *testing.T) {
	t.Parallel()
	node, npm := testenv.LookNode(t)
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "package.json", content: `{"scripts": {"start": "node --watch server.mjs", "dev": "tsc && node server.mjs"}}`},
		idFile{path: "server.mjs", content: "import './lib/helper.mjs';\n"},
		idFile{path: "lib/helper.mjs", content: "export const x = 1;\n"},
	)
	env := []string{"PATH=" + filepath.Dir(npm) + ":" + filepath.Dir(node) + ":/usr/bin:/bin"}
	id := idCompute(t, Spec{Dir: dir, Command: []string{"npm", "start"}, Versions: idVersions, Environ: env})
	if id.Entry.Path != "server.mjs" || !slices.Contains(wrapperPaths(id), "package.json") {
		t.Fatalf("npm start: entry %s, wrappers %q; want server.mjs, and package.json among the wrappers\n%q", id.Entry.Path, wrapperPaths(id), id.Inferred)
	}
	if len(id.Runs) == 0 || !slices.Equal(id.Runs[len(id.Runs)-1], []string{"node", "--watch", "server.mjs"}) {
		t.Errorf("npm start: runs %q, want node --watch server.mjs last", id.Runs)
	}
	if len(id.Code) != 1 || id.Code[0].Path != "." {
		t.Errorf("npm start: code %v, want the project root", id.Code)
	}
	if err := id.Uncovered(); err != nil {
		t.Errorf("npm start: %v", err)
	}
	dev := idCompute(t, Spec{Dir: dir, Command: []string{"npm", "run", "dev"}, Versions: idVersions, Environ: env})
	if len(dev.Code) != 1 || dev.Code[0].Path != "." || !hasInferred(dev, "not followed") {
		t.Errorf("npm run dev (shell syntax): code %v, inferred %q; want the whole project", dev.Code, dev.Inferred)
	}
	none := idCompute(t, Spec{Dir: dir, Command: []string{"npm", "run", "missing"}, Versions: idVersions, Environ: env})
	if none.Uncovered() == nil {
		t.Errorf("npm run missing: no script, nothing of the project hashed (entry %s), yet not Uncovered", none.Entry.Path)
	}
}

// A root node entry's code is every file node loads as code under the
// project root, at any depth and git-ignored or not: editing
// lib/helper.mjs is a change of the root's code; data a server writes
// beside it (data/state.json, a log) is not (a directory with no code
// file is listed as a directory, as in any tree), nor is node_modules, which is
// a dependency tree of its own.
func TestRootNodeEntryWholeTree(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "server.mjs", content: "import './lib/helper.mjs';\n"},
		idFile{path: "lib/helper.mjs", content: "export const x = 1;\n"},
		idFile{path: ".gitignore", content: "gen/\n"},
		idFile{path: "gen/made.cjs", content: "module.exports = 1;\n"},
		idFile{path: "data/state.json", content: "[]\n"},
	)
	fake := idFakeBin(t, "a")
	spec := Spec{Dir: dir, Command: []string{"node", "server.mjs"}, Versions: idVersions, Environ: []string{"PATH=" + fake}}
	before := idCompute(t, spec)
	if len(before.Code) != 1 || before.Code[0].Path != "." || before.Code[0].Files != 2 {
		t.Fatalf("code %+v, want the root with lib/helper.mjs and gen/made.cjs", before.Code)
	}
	idWrite(t, dir, idFile{path: "data/state.json", content: "{}\n"}, idFile{path: "server.log", content: "x\n"},
		idFile{path: "node_modules/dep/index.js", content: "1\n"})
	same := idCompute(t, spec)
	if same.Code[0].Digest != before.Code[0].Digest {
		t.Errorf("data files and node_modules changed the root's code digest")
	}
	idWrite(t, dir, idFile{path: "lib/helper.mjs", content: "export const x = 2;\n"})
	idWantOneChange(t, same, idCompute(t, spec), ".")
	idWrite(t, dir, idFile{path: "gen/made.cjs", content: "module.exports = 2;\n"})
	after := idCompute(t, spec)
	if after.Code[0].Digest == same.Code[0].Digest {
		t.Errorf("a git-ignored module's edit left the root's code digest unchanged")
	}
}

// sh ./run.sh is parsed as a shell script: its last "exec node server.mjs"
// is followed whatever comes before it, and a command before it that runs
// a program named by path (./bin/migrate) makes the whole project code.
func TestShellScriptParsed(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/bin/sh")
	dir := idTempDir(t)
	fake := idFakeBin(t, "a")
	idWrite(t, dir,
		idFile{path: "run.sh", content: "#!/bin/sh\nif [ -f x ]; then\n  export A=1\nfi\nexec node server.mjs \\\n  --port 1\n"},
		idFile{path: "server.mjs", content: "1\n"},
	)
	spec := Spec{Dir: dir, Command: []string{"sh", "run.sh"}, Versions: idVersions, Environ: []string{"PATH=" + fake + ":/usr/bin:/bin"}}
	id := idCompute(t, spec)
	if id.Entry.Path != "server.mjs" || len(id.Runs) != 1 || id.Runs[0][0] != "node" {
		t.Fatalf("entry %s, runs %q; want server.mjs run by node\n%q", id.Entry.Path, id.Runs, id.Inferred)
	}
	idWrite(t, dir, idFile{path: "run.sh", content: "#!/bin/sh\n./bin/migrate\nexec node server.mjs\n"},
		idFile{path: "bin/migrate", content: "#!/bin/sh\n", mode: 0o755})
	id = idCompute(t, spec)
	if id.Entry.Path != "server.mjs" || len(id.Code) != 1 || id.Code[0].Path != "." || id.Code[0].Files == 0 || !hasInferred(id, "./bin/migrate") {
		t.Errorf("a script that runs ./bin/migrate: entry %s, code %+v; want the whole project as code\n%q", id.Entry.Path, id.Code, id.Inferred)
	}
}

// A test command ("[ … ]") before the exec is no program of the project:
// the exec'd binary is followed and the project is not made code. A bare
// name that the server's PATH finds inside the project (tools/migrate) is
// project code the exec does not name: the whole project is code.
func TestShellScriptBareNames(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/bin/sh")
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "run.sh", content: "#!/bin/sh\nif [ -n \"${X+set}\" ]; then\n  echo x >> log\nfi\nexec ./bin/server\n"},
		idFile{path: "bin/server", content: "\x7fELF\n", mode: 0o755},
		idFile{path: "tools/migrate", content: "#!/bin/sh\n", mode: 0o755},
	)
	spec := Spec{Dir: dir, Command: []string{"sh", "run.sh"}, Versions: idVersions, Environ: []string{"PATH=/usr/bin:/bin"}}
	id := idCompute(t, spec)
	if len(id.Code) != 0 || hasInferred(id, "before its last command") {
		t.Errorf("a script that tests a variable: code %+v; want none\n%q", id.Code, id.Inferred)
	}
	idWrite(t, dir, idFile{path: "run.sh", content: "#!/bin/sh\nmigrate\nexec ./bin/server\n"})
	spec.Environ = []string{"PATH=" + filepath.Join(dir, "tools") + ":/usr/bin:/bin"}
	id = idCompute(t, spec)
	if len(id.Code) != 1 || id.Code[0].Path != "." || !hasInferred(id, "runs migrate before its last command") {
		t.Errorf("a script that runs tools/migrate by name: code %+v; want the whole project as code\n%q", id.Code, id.Inferred)
	}
}
