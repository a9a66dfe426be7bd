package build

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// wrapperNeeds ends the test with testenv.Missing when a program the
// kernel or a shell script needs is missing.
func wrapperNeeds(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			testenv.Missing(t, fmt.Sprintf("%s is needed by this test (%v): install it (apt-get install coreutils dash)", p, err))
		}
	}
}

// realPath resolves symbolic links in p.
func realPath(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wrapperPaths returns the paths of id's wrappers.
func wrapperPaths(id *Identity) []string {
	var out []string
	for _, w := range id.Wrappers {
		out = append(out, w.Path)
	}
	return out
}

func hasInferred(id *Identity, sub string) bool {
	return slices.ContainsFunc(id.Inferred, func(s string) bool { return strings.Contains(s, sub) })
}

// A run.sh launched directly: it is a wrapper, its last line "exec node
// a.js" is followed to the runtime node and the entry a.js, and editing it
// to exec something else is a new identity though the launch command stays
// the same.
func TestWrapperShebangScriptChanged(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/bin/sh")
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "run.sh", content: "#!/bin/sh\nexec node a.js\n", mode: 0o755},
		idFile{path: "a.js", content: "console.log('a');\n"},
		idFile{path: "b.js", content: "console.log('b');\n"},
	)
	fake := idFakeBin(t, "a")
	spec := Spec{Dir: dir, Command: []string{"./run.sh"}, Versions: idVersions, Environ: []string{"PATH=" + fake}}
	before := idCompute(t, spec)
	if got := wrapperPaths(before); !slices.Equal(got, []string{"run.sh"}) {
		t.Fatalf("wrappers %q, want [run.sh]", got)
	}
	if before.Runtime.Path != filepath.ToSlash(realPath(t, filepath.Join(fake, "node"))) {
		t.Errorf("runtime %s, want the node on PATH (%s)", before.Runtime.Path, filepath.Join(fake, "node"))
	}
	if before.Entry.Path != "a.js" {
		t.Errorf("entry %s, want a.js (what run.sh execs)", before.Entry.Path)
	}
	if !hasInferred(before, "run.sh starts with #!/bin/sh") || !hasInferred(before, "run.sh runs node a.js") {
		t.Errorf("inferred %q does not say how run.sh was read", before.Inferred)
	}

	idWrite(t, dir, idFile{path: "run.sh", content: "#!/bin/sh\nexec node b.js\n", mode: 0o755})
	after := idCompute(t, spec)
	if after.Wrappers[0].Digest == before.Wrappers[0].Digest {
		t.Fatalf("wrapper digest unchanged after run.sh was edited")
	}
	if after.Wrappers[0].Digest != DigestBytes([]byte("#!/bin/sh\nexec node b.js\n")) {
		t.Errorf("wrapper digest %s is not the digest of run.sh", after.Wrappers[0].Digest)
	}
	// a.js and b.js swap roles: the entry is now b.js, and the root tree,
	// which leaves the entry out, holds a.js instead.
	idWantChanges(t, before, after, "b.js", ".", "run.sh", "a.js (gone)")

	// A script whose last line is not a plain exec keeps the shell as the
	// runtime and the script as the entry.
	idWrite(t, dir, idFile{path: "run.sh", content: "#!/bin/sh\nnode a.js && echo done\n", mode: 0o755})
	plain := idCompute(t, spec)
	if plain.Runtime.Path != filepath.ToSlash(realPath(t, "/bin/sh")) || plain.Entry.Path != "run.sh" {
		t.Errorf("not followed: runtime %s entry %s, want /bin/sh resolved and run.sh", plain.Runtime.Path, plain.Entry.Path)
	}
}

// An entry named explicitly (entry in mcpepoch.toml) is hashed next to the
// wrapper: a rebuilt file that an unchanged run.sh execs is a new identity.
func TestWrapperExplicitEntryBehindScript(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/bin/sh")
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "run.sh", content: "#!/bin/sh\nexec node dist/server.js\n", mode: 0o755},
		idFile{path: "dist/server.js", content: "console.log('a');\n"},
	)
	spec := Spec{Dir: dir, Command: []string{"./run.sh"}, Entry: "dist/server.js", Versions: idVersions,
		Environ: []string{"PATH=" + idFakeBin(t, "a")}}
	before := idCompute(t, spec)
	if before.Entry.Path != "dist/server.js" || !slices.Equal(wrapperPaths(before), []string{"run.sh"}) {
		t.Fatalf("entry %s wrappers %q, want dist/server.js behind run.sh", before.Entry.Path, wrapperPaths(before))
	}
	idRewrite(t, filepath.Join(dir, "dist/server.js"), "console.log('b');\n")
	idWantChanges(t, before, idCompute(t, spec), "dist/server.js")
}

// "#!/usr/bin/env node" is resolved on the server's PATH, as env(1) does:
// another node first on PATH is another runtime.
func TestWrapperEnvShebangResolvesNodeOnPath(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/usr/bin/env")
	for _, line := range []string{"#!/usr/bin/env node", "#!/usr/bin/env -S node --enable-source-maps"} {
		t.Run(line, func(t *testing.T) {
			dir := idTempDir(t)
			idWrite(t, dir, idFile{path: "server.js", content: line + "\nconsole.log(1);\n", mode: 0o755})
			binA, binB := idFakeBin(t, "a"), idFakeBin(t, "b")
			spec := Spec{Dir: dir, Command: []string{"./server.js"}, Versions: idVersions, Environ: []string{"PATH=" + binA + ":" + binB}}
			a := idCompute(t, spec)
			if want := filepath.ToSlash(filepath.Join(binA, "node")); a.Runtime.Path != want {
				t.Errorf("runtime %s, want %s", a.Runtime.Path, want)
			}
			if a.Entry.Path != "server.js" || !slices.Equal(wrapperPaths(a), []string{"server.js"}) {
				t.Errorf("entry %s wrappers %q, want server.js as both", a.Entry.Path, wrapperPaths(a))
			}
			if !hasInferred(a, "node resolved on PATH") {
				t.Errorf("inferred %q does not say node was resolved on PATH", a.Inferred)
			}

			spec.Environ = []string{"PATH=" + binB + ":" + binA}
			b := idCompute(t, spec)
			if want := filepath.ToSlash(filepath.Join(binB, "node")); b.Runtime.Path != want {
				t.Errorf("PATH reordered: runtime %s, want %s", b.Runtime.Path, want)
			}
			if b.Runtime.Digest == a.Runtime.Digest {
				t.Errorf("two different node binaries have one digest")
			}
		})
	}
}

// The same with the node installed on this machine, through the real PATH.
func TestWrapperEnvShebangRealNode(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/usr/bin/env")
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node is not on PATH: install Node.js to run this test")
	}
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "server.js", content: "#!/usr/bin/env node\nconsole.log(1);\n", mode: 0o755})
	id := idCompute(t, Spec{Dir: dir, Command: []string{"./server.js"}})
	if want := filepath.ToSlash(realPath(t, node)); id.Runtime.Path != want {
		t.Errorf("runtime %s, want %s", id.Runtime.Path, want)
	}
	if !strings.HasPrefix(id.Runtime.Version, "v") {
		t.Errorf("runtime version %q, want node's own (v…)", id.Runtime.Version)
	}
	if d, _, err := FileDigest(node); err != nil || id.Runtime.Digest != d {
		t.Errorf("runtime digest %s, want %s (%v)", id.Runtime.Digest, d, err)
	}
}

// sh -c 'exec node x.js': the shell is a wrapper, node is the runtime and
// x.js the entry.
func TestWrapperShellDashC(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/bin/sh")
	for _, line := range []string{"exec node x.js", "node x.js", "exec node --enable-source-maps x.js"} {
		t.Run(line, func(t *testing.T) {
			dir := idTempDir(t)
			idWrite(t, dir, idFile{path: "x.js", content: "console.log('x');\n"})
			bin := idFakeBin(t, "a")
			spec := Spec{Dir: dir, Command: []string{"sh", "-c", line}, Versions: idVersions,
				Environ: []string{"PATH=" + bin + ":/usr/bin:/bin"}}
			before := idCompute(t, spec)
			if want := filepath.ToSlash(filepath.Join(bin, "node")); before.Runtime.Path != want {
				t.Errorf("runtime %s, want %s", before.Runtime.Path, want)
			}
			if before.Entry.Path != "x.js" {
				t.Errorf("entry %s, want x.js", before.Entry.Path)
			}
			sh, err := exec.LookPath("sh")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := wrapperPaths(before), []string{filepath.ToSlash(realPath(t, sh))}; !slices.Equal(got, want) {
				t.Errorf("wrappers %q, want %q", got, want)
			}
			if !hasInferred(before, "-c runs node") {
				t.Errorf("inferred %q does not say what -c runs", before.Inferred)
			}
			idRewrite(t, filepath.Join(dir, "x.js"), "console.log('y');\n")
			idWantChanges(t, before, idCompute(t, spec), "x.js")
		})
	}
}

// A -c command line that is not a plain "[exec] CMD ARGS" (a builtin first,
// a variable assignment) is valid shell and starts the server without
// mcpepoch; computing its identity must not fail. The shell can stay the
// runtime, with what was not followed said in Inferred.
func TestWrapperShellDashCNotPlainCommand(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/bin/sh")
	for _, line := range []string{
		"cd . && exec node x.js",
		"NODE_ENV=production exec node x.js",
		"set -e; exec node x.js",
	} {
		t.Run(line, func(t *testing.T) {
			dir := idTempDir(t)
			idWrite(t, dir, idFile{path: "x.js", content: "console.log('x');\n"})
			bin := idFakeBin(t, "a")
			spec := Spec{Dir: dir, Command: []string{"sh", "-c", line}, Versions: idVersions,
				Environ: []string{"PATH=" + bin + ":/usr/bin:/bin"}}
			id, err := Compute(spec)
			if err != nil {
				t.Fatalf("Compute of sh -c %q: %v", line, err)
			}
			if strings.HasPrefix(line, "NODE_ENV") {
				// Assignments before the command are plain: followed.
				if id.Entry.Path != "x.js" || filepath.Base(id.Runtime.Path) != "node" {
					t.Errorf("entry %s runtime %s, want x.js and node", id.Entry.Path, id.Runtime.Path)
				}
			} else if !hasInferred(id, "shell syntax, not followed") {
				t.Errorf("inferred %q does not say the command line was not followed", id.Inferred)
			}
		})
	}
}

// Quoted arguments and env(1) are followed like plain words.
func TestWrapperQuotesAndEnv(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/bin/sh")
	dir := idTempDir(t)
	idWrite(t, dir, idFile{path: "my server.js", content: "console.log('x');\n"})
	bin := idFakeBin(t, "a")
	env := []string{"PATH=" + bin + ":/usr/bin:/bin"}
	for _, cmd := range [][]string{
		{"sh", "-c", `exec node "my server.js"`},
		{"sh", "-c", `exec node 'my server.js'`},
		{"env", "NODE_ENV=production", "node", "my server.js"},
	} {
		id := idCompute(t, Spec{Dir: dir, Command: cmd, Versions: idVersions, Environ: env})
		if id.Entry.Path != "my server.js" || filepath.Base(id.Runtime.Path) != "node" {
			t.Errorf("%q: entry %s runtime %s, want my server.js and node", cmd, id.Entry.Path, id.Runtime.Path)
		}
	}
}

// npx NAME runs node_modules/.bin/NAME: that script is the entry, npx (a
// node script) a wrapper, node the runtime.
func TestWrapperNpx(t *testing.T) {
	t.Parallel()
	wrapperNeeds(t, "/usr/bin/env")
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "node_modules/mcp-srv/cli.js", content: "#!/usr/bin/env node\nconsole.log('srv');\n", mode: 0o755},
		idFile{path: "node_modules/mcp-srv/package.json", content: `{"name":"mcp-srv","bin":"cli.js"}`},
		idFile{path: "node_modules/.bin/mcp-srv", link: "../mcp-srv/cli.js"},
	)
	bin := idFakeBin(t, "a")
	idWrite(t, bin, idFile{path: "npx", content: "#!/usr/bin/env node\n// npx\n", mode: 0o755})
	for _, cmd := range [][]string{{"npx", "mcp-srv"}, {"npx", "-y", "mcp-srv", "--port", "0"}} {
		t.Run(strings.Join(cmd, " "), func(t *testing.T) {
			spec := Spec{Dir: dir, Command: cmd, Versions: idVersions, Environ: []string{"PATH=" + bin}}
			id := idCompute(t, spec)
			if id.Entry.Path != "node_modules/mcp-srv/cli.js" {
				t.Errorf("entry %s, want node_modules/mcp-srv/cli.js", id.Entry.Path)
			}
			if want := filepath.ToSlash(filepath.Join(bin, "node")); id.Runtime.Path != want {
				t.Errorf("runtime %s, want %s", id.Runtime.Path, want)
			}
			if !slices.Contains(wrapperPaths(id), filepath.ToSlash(filepath.Join(bin, "npx"))) {
				t.Errorf("wrappers %q lack npx", wrapperPaths(id))
			}
			if !hasInferred(id, "npx mcp-srv runs node_modules/.bin/mcp-srv") {
				t.Errorf("inferred %q does not say what npx runs", id.Inferred)
			}
		})
	}
	spec := Spec{Dir: dir, Command: []string{"npx", "mcp-srv"}, Versions: idVersions, Environ: []string{"PATH=" + bin}}
	before := idCompute(t, spec)
	idRewrite(t, filepath.Join(dir, "node_modules/mcp-srv/cli.js"), "#!/usr/bin/env node\nconsole.log('SRV');\n")
	idWantChanges(t, before, idCompute(t, spec), "node_modules/mcp-srv/cli.js", "node_modules")
}

// The same with the npx installed on this machine.
func TestWrapperRealNpx(t *testing.T) {
	t.Parallel()
	npx, err := exec.LookPath("npx")
	if err != nil {
		testenv.Missing(t, "npx is not on PATH: install Node.js with npm to run this test")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node is not on PATH: install Node.js to run this test")
	}
	dir := idTempDir(t)
	idWrite(t, dir,
		idFile{path: "node_modules/mcp-srv/cli.js", content: "#!/usr/bin/env node\nconsole.log('srv');\n", mode: 0o755},
		idFile{path: "node_modules/.bin/mcp-srv", link: "../mcp-srv/cli.js"},
	)
	id := idCompute(t, Spec{Dir: dir, Command: []string{"npx", "mcp-srv"}})
	if id.Entry.Path != "node_modules/mcp-srv/cli.js" {
		t.Errorf("entry %s, want node_modules/mcp-srv/cli.js", id.Entry.Path)
	}
	if want := filepath.ToSlash(realPath(t, node)); id.Runtime.Path != want {
		t.Errorf("runtime %s, want %s", id.Runtime.Path, want)
	}
	if want := filepath.ToSlash(realPath(t, npx)); !slices.Contains(wrapperPaths(id), want) {
		t.Errorf("wrappers %q lack npx (%s)", wrapperPaths(id), want)
	}
}
