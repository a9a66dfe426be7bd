package build

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// artifactOf returns the artifact of role with path in id.
func artifactOf(id *Identity, role Role, path string) (Artifact, bool) {
	for _, a := range id.Artifacts() {
		if a.Role == role && a.Path == path {
			return a, true
		}
	}
	return Artifact{}, false
}

// Every file an argument of the launch names is an input, whatever its
// extension: the file node --env-file reads (whose NODE_OPTIONS line
// would preload other code), given as the next argument or as
// --flag=value, and a path named but not there yet (--env-file-if-exists),
// which changes the identity when it appears. A file hashed in another
// role (the entry) is not hashed again, and a directory is not hashed.
func TestIdentityArgFiles(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "server.mjs", content: "console.log(1);\n"},
		idFile{path: ".env", content: "PORT=1\n"},
		idFile{path: "conf/app.env", content: "A=1\n"},
		idFile{path: "data/state", content: "x\n"},
	)
	bin := idFakeBin(t, "a")
	spec := Spec{Dir: dir, Versions: idVersions, Environ: []string{"PATH=" + bin},
		Command: []string{"node", "--env-file", ".env", "--env-file=conf/app.env", "--env-file-if-exists=./.env.local", "server.mjs", "--data", "data", "--port=8080", "start"}}
	before := idCompute(t, spec)
	var args []string
	for _, a := range before.Args {
		s := a.Path
		if a.Missing {
			s += " (missing)"
		}
		args = append(args, s)
	}
	if want := []string{".env", "conf/app.env", ".env.local (missing)"}; !slices.Equal(args, want) {
		t.Fatalf("args %q, want %q", args, want)
	}

	idWrite(t, dir, idFile{path: ".env", content: "NODE_OPTIONS=--require ./evil.js\n"})
	next := idCompute(t, spec)
	idWantChanges(t, before, next, ".env")
	idWrite(t, dir, idFile{path: "conf/app.env", content: "NODE_OPTIONS=--import=/tmp/x.mjs\n"})
	third := idCompute(t, spec)
	idWantChanges(t, next, third, "conf/app.env")
	idWrite(t, dir, idFile{path: ".env.local", content: "NODE_OPTIONS=--require ./evil.js\n"})
	idWantChanges(t, third, idCompute(t, spec), ".env.local")
	idWrite(t, dir, idFile{path: "data/state", content: "y\n"})
	if c := Changes(third, idCompute(t, spec)); slices.Contains(c, "data") || slices.Contains(c, "data/state") {
		t.Errorf("a directory named by an argument was hashed: changes %q", c)
	}
}

// A file the server writes that its command line names (a database given
// as --db ./state.db) is hashed like any argument until the project names
// it as data; then writes to it change nothing.
func TestIdentityArgData(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "server.mjs", content: "console.log(1);\n"},
		idFile{path: "state.db", content: "a\n"},
		idFile{path: "db/other.db", content: "a\n"},
	)
	bin := idFakeBin(t, "a")
	spec := Spec{Dir: dir, Versions: idVersions, Environ: []string{"PATH=" + bin},
		Command: []string{"node", "server.mjs", "--db", "./state.db", "--db2=db/other.db"}}
	before := idCompute(t, spec)
	idWrite(t, dir, idFile{path: "state.db", content: "b\n"})
	idWantChanges(t, before, idCompute(t, spec), "state.db")

	spec.Data = []string{"./state.db", "db/*.db"}
	before = idCompute(t, spec)
	if len(before.Args) != 0 {
		t.Fatalf("args %+v, want none: both are data", before.Args)
	}
	idWrite(t, dir, idFile{path: "state.db", content: "c\n"}, idFile{path: "db/other.db", content: "c\n"})
	if c := Changes(before, idCompute(t, spec)); len(c) != 0 {
		t.Errorf("writes to the server's data changed the identity: %q", c)
	}

	// A program built in the project is its own entry: the database its
	// command line names is an argument, which data takes out, never the
	// entry (which data would not take out).
	idWrite(t, dir, idFile{path: "bin/server", content: "\x7fELF a server\n", mode: 0o755})
	spec.Command = []string{"./bin/server", "--db", "./state.db"}
	before = idCompute(t, spec)
	if before.Entry.Path != "bin/server" || len(before.Args) != 0 {
		t.Fatalf("entry %s, args %+v; want bin/server, and state.db left out as data", before.Entry.Path, before.Args)
	}
	idWrite(t, dir, idFile{path: "state.db", content: "d\n"})
	if c := Changes(before, idCompute(t, spec)); len(c) != 0 {
		t.Errorf("a write to the compiled server's database changed the identity: %q", c)
	}
}

// A package manager that runs a package.json script reads its
// configuration from the project first: npm's .npmrc (node-options,
// script-shell), pnpm's .npmrc and pnpm-workspace.yaml, yarn's .yarnrc.yml
// and .yarnrc, bun's bunfig.toml. Each is an input, missing until it is
// written (then the identity changes), and edited later; one in a
// directory above the project is hashed too.
func TestIdentityLauncherConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		command []string
		files   []string
	}{
		{[]string{"npm", "start"}, []string{".npmrc"}},
		{[]string{"pnpm", "start"}, []string{".npmrc", "pnpm-workspace.yaml"}},
		{[]string{"yarn", "start"}, []string{".yarnrc.yml", ".yarnrc", ".npmrc"}},
		{[]string{"bun", "run", "start"}, []string{"bunfig.toml"}},
	} {
		t.Run(tc.command[0], func(t *testing.T) {
			t.Parallel()
			top := idTempDir(t)
			dir := filepath.Join(top, "proj")
			idWrite(t, dir,
				idFile{path: "package.json", content: `{"scripts": {"start": "node server.mjs"}}`},
				idFile{path: "server.mjs", content: "console.log(1);\n"},
			)
			bin := idFakeBin(t, "a", tc.command[0])
			spec := Spec{Dir: dir, Command: tc.command, Versions: idVersions, Environ: []string{"PATH=" + bin}}
			before := idCompute(t, spec)
			for _, f := range tc.files {
				if a, ok := artifactOf(before, RoleConfig, f); !ok || !a.Missing {
					t.Fatalf("%s: config %s: %+v (found %v), want it recorded missing; config %+v", tc.command, f, a, ok, before.Config)
				}
			}
			prev := before
			for _, f := range tc.files {
				idWrite(t, dir, idFile{path: f, content: "node-options=--require /tmp/evil.cjs\n"})
				next := idCompute(t, spec)
				idWantChanges(t, prev, next, f)
				idWrite(t, dir, idFile{path: f, content: "script-shell=/tmp/evil.sh\n"})
				prev = idCompute(t, spec)
				idWantChanges(t, next, prev, f)
			}
			idWrite(t, top, idFile{path: tc.files[0], content: "node-options=--require /tmp/evil.cjs\n"})
			above := filepath.ToSlash(filepath.Join(top, tc.files[0]))
			if _, ok := artifactOf(idCompute(t, spec), RoleConfig, above); !ok {
				t.Errorf("%s: %s above the project is not hashed", tc.command, above)
			}
		})
	}
}

// A virtual environment's python reads pyvenv.cfg at start, whose home
// names the interpreter and standard library that run: editing it, or
// writing one beside the executable (which Python reads instead), changes
// the identity, for a venv inside the project (.venv/bin/python) and one
// outside it. A real venv, made by python3 -m venv.
func TestIdentityPythonVenvConfig(t *testing.T) {
	t.Parallel()
	py := testenv.Need(t, "python3", testenv.InstallPython)
	dir := idTempDir(t)
	outside := idTempDir(t)
	for _, v := range []string{filepath.Join(dir, ".venv"), filepath.Join(outside, "env")} {
		if out, err := exec.Command(py, "-m", "venv", "--without-pip", v).CombinedOutput(); err != nil {
			testenv.Missing(t, "python3 -m venv: "+err.Error()+": "+string(out)+": "+testenv.InstallPython)
		}
	}
	idWrite(t, dir, idFile{path: "server.py", content: "print(1)\n"})
	for _, tc := range []struct {
		python string // as the launch names it
		cfg    string // the pyvenv.cfg as the identity names it
		beside string // where Python looks first
	}{
		{".venv/bin/python", ".venv/pyvenv.cfg", ".venv/bin/pyvenv.cfg"},
		{filepath.Join(outside, "env", "bin", "python"), filepath.ToSlash(filepath.Join(outside, "env", "pyvenv.cfg")), filepath.ToSlash(filepath.Join(outside, "env", "bin", "pyvenv.cfg"))},
	} {
		spec := Spec{Dir: dir, Command: []string{tc.python, "server.py"}, Versions: idVersions, Environ: []string{"PATH=/usr/bin:/bin"}}
		before := idCompute(t, spec)
		if a, ok := artifactOf(before, RoleConfig, tc.cfg); !ok || a.Missing {
			t.Fatalf("%s: pyvenv.cfg %s not hashed: config %+v", tc.python, tc.cfg, before.Config)
		}
		cfg := filepath.Join(dir, filepath.FromSlash(tc.cfg))
		if filepath.IsAbs(tc.cfg) {
			cfg = filepath.FromSlash(tc.cfg)
		}
		b, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "home = ", "home = /opt/other/bin\n# was: ", 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		next := idCompute(t, spec)
		idWantChanges(t, before, next, tc.cfg)
		beside := filepath.Join(dir, filepath.FromSlash(tc.beside))
		if filepath.IsAbs(tc.beside) {
			beside = filepath.FromSlash(tc.beside)
		}
		if err := os.WriteFile(beside, b, 0o644); err != nil {
			t.Fatal(err)
		}
		// Python reads the one beside it, and no other.
		idWantChanges(t, next, idCompute(t, spec), tc.beside, tc.cfg+" (gone)")
	}
}

// A ._pth file beside the Python executable replaces sys.path at start
// (Python 3.11 on, every platform): where one would be read is an input,
// so writing one there changes the identity.
func TestIdentityPythonPth(t *testing.T) {
	t.Parallel()
	py := testenv.Need(t, "python3", testenv.InstallPython)
	dir := idTempDir(t)
	if out, err := exec.Command(py, "-m", "venv", "--without-pip", filepath.Join(dir, ".venv")).CombinedOutput(); err != nil {
		testenv.Missing(t, "python3 -m venv: "+err.Error()+": "+string(out)+": "+testenv.InstallPython)
	}
	idWrite(t, dir, idFile{path: "server.py", content: "print(1)\n"})
	spec := Spec{Dir: dir, Command: []string{".venv/bin/python", "server.py"}, Versions: idVersions, Environ: []string{"PATH=/usr/bin:/bin"}}
	before := idCompute(t, spec)
	if a, ok := artifactOf(before, RoleConfig, ".venv/bin/python._pth"); !ok || !a.Missing {
		t.Fatalf("config %+v, want .venv/bin/python._pth recorded missing", before.Config)
	}
	shadow := idTempDir(t)
	idWrite(t, dir, idFile{path: ".venv/bin/python._pth", content: shadow + "\n"})
	// The premise: this Python reads it.
	out, err := exec.Command(filepath.Join(dir, ".venv", "bin", "python"), "-c", "import sys; print(sys.path)").CombinedOutput()
	if err == nil && !strings.Contains(string(out), shadow) {
		t.Logf("this Python does not read %s: sys.path %s", ".venv/bin/python._pth", out)
	}
	idWantChanges(t, before, idCompute(t, spec), ".venv/bin/python._pth")
}

// A server run from source reads the tsconfig.json bases its tsconfig.json
// extends, whose paths change what an import resolves to: each base in
// the chain, in the project or outside it, is an input.
func TestIdentityTSConfigBases(t *testing.T) {
	t.Parallel()
	dir := idTempDir(t)
	outside := idTempDir(t)
	idWrite(t, outside, idFile{path: "shared.json", content: `{"compilerOptions": {"baseUrl": "."}}`})
	idWrite(t, dir,
		idFile{path: "server.ts", content: "import './lib/impl';\n"},
		idFile{path: "tsconfig.json", content: "{\n  // the project's\n  \"extends\": \"./tsconfig.base\",\n}\n"},
		idFile{path: "tsconfig.base.json", content: `{"extends": ["` + filepath.Join(outside, "shared.json") + `"], "compilerOptions": {"paths": {"@lib/*": ["lib/*"]}}}`},
	)
	spec := Spec{Dir: dir, Command: []string{"bun", "server.ts"}, Versions: idVersions, Environ: []string{"PATH=" + idFakeBin(t, "a", "bun")}}
	before := idCompute(t, spec)
	idWrite(t, dir, idFile{path: "tsconfig.base.json", content: `{"extends": ["` + filepath.Join(outside, "shared.json") + `"], "compilerOptions": {"paths": {"@lib/*": ["/tmp/agent/*"]}}}`})
	next := idCompute(t, spec)
	idWantChanges(t, before, next, "tsconfig.base.json")
	idWrite(t, outside, idFile{path: "shared.json", content: `{"compilerOptions": {"baseUrl": "/tmp/agent"}}`})
	idWantChanges(t, next, idCompute(t, spec), filepath.ToSlash(filepath.Join(outside, "shared.json")))
}
