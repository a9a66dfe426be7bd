package build

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mcpepoch/mcpepoch/audit"
)

// Role says what an artifact is to the server it belongs to.
type Role string

// The roles an Artifact can have.
const (
	RoleEntry    Role = "entry"    // the file the runtime loads, or the executable itself
	RoleCode     Role = "code"     // the project's own code besides the entry: a tree (dist/) or a file (a preload)
	RoleLockfile Role = "lockfile" // a dependency lockfile (package-lock.json, go.sum, …)
	RoleRuntime  Role = "runtime"  // the interpreter or executable the launch command resolves to
	RoleWrapper  Role = "wrapper"  // a script between the launch command and the runtime (shebang, sh -c, npx)
	RoleDeps     Role = "deps"     // a resolved dependency tree (node_modules, site-packages): a TreeDigest
	RoleEnv      Role = "env"      // an environment variable that redirects execution: digest of its value
	RoleEnvFile  Role = "env-file" // a .env file named in mcpepoch.toml
	RoleArg      Role = "arg"      // a file an argument of the launch command names (node --env-file .env)
	RoleConfig   Role = "config"   // a file the runtime or launcher reads at start that changes what runs (pyvenv.cfg, .npmrc)
)

// RedirectingEnv lists the environment variables recorded by default: they
// change which code runs without changing any file (loader preloads,
// interpreter options and search paths). Only a digest of each value is
// kept, never the value.
var RedirectingEnv = []string{
	"PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH",
	"DYLD_FRAMEWORK_PATH", "NODE_OPTIONS", "NODE_PATH", "NODE_EXTRA_CA_CERTS", "PYTHONPATH", "PYTHONHOME",
	"PYTHONSTARTUP", "PYTHONSAFEPATH", "PYTHONPYCACHEPREFIX", "VIRTUAL_ENV", "GODEBUG", "GOEXPERIMENT", "RUBYOPT", "RUBYLIB",
	"PERL5OPT", "PERL5LIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "BUN_OPTIONS", "DENO_DIR",
}

// Artifact is one input of a server's identity.
type Artifact struct {
	Role Role `json:"role"`
	// Path is slash-separated and relative to Identity.Dir when the file lies
	// inside it, absolute otherwise (a runtime on PATH, say). It is a label
	// for people: the identity is the Digest, never the path.
	Path   string `json:"path"`
	Digest Digest `json:"digest,omitempty"` // zero when Missing
	Size   int64  `json:"size,omitempty"`   // bytes
	// Version is the runtime's own version ("v20.20.2", "go1.26.8",
	// "Python 3.11.7"); set only for RoleRuntime, empty when unknown.
	Version string `json:"version,omitempty"`
	// Missing is set when the file does not exist (only Compute with
	// Spec.BestEffort returns such files) or the variable is unset.
	Missing bool `json:"missing,omitempty"`
	// Files and Native are set for a tree (RoleDeps, RoleCode): its regular
	// files and its native addons (*.node), listed in Identity.Native.
	Files  int `json:"files,omitempty"`
	Native int `json:"native,omitempty"`
	// Why says, for people, why this input is part of the identity.
	Why string `json:"why,omitempty"`

	// stamp, when Compute recorded one, is the SHA-256 of the device,
	// inode and ctime of the file (or of every file of the tree) as it
	// was hashed: not an input and not recorded, but what Touched
	// compares.
	stamp Digest
}

// GoInfo is what a Go binary says of its own build (debug/buildinfo).
type GoInfo struct {
	GoVersion string `json:"goVersion"`
	Path      string `json:"path"`          // main package path
	Module    string `json:"module"`        // main module path
	Version   string `json:"version"`       // main module version, "(devel)" for a local build
	VCS       string `json:"vcs,omitempty"` // "git", … when built in a checkout
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"` // the checkout had uncommitted changes
}

// Identity is what a launch command will execute, described by content.
type Identity struct {
	Dir     string   `json:"dir"`     // absolute working directory of the server
	Command []string `json:"command"` // launch command as given
	Entry   Artifact `json:"entry"`
	// Code is the project's own code the runtime loads besides the entry:
	// the code tree the entry belongs to (dist/ for dist/server.js), files
	// node preloads, the source a server run from source compiles, or
	// what Spec.Code names.
	Code      []Artifact `json:"code"`
	Lockfiles []Artifact `json:"lockfiles"` // sorted by Path
	Runtime   Artifact   `json:"runtime"`
	Wrappers  []Artifact `json:"wrappers"` // in launch order
	Deps      []Artifact `json:"deps"`     // dependency trees, by path
	Env       []Artifact `json:"env"`      // redirecting variables, by name
	EnvFiles  []Artifact `json:"envFiles"` // by path
	// Args are the files the launch's command lines name that no other
	// role hashes (argFiles), in command-line order.
	Args []Artifact `json:"args"`
	// Config are the configuration files the runtime (a virtual
	// environment's pyvenv.cfg) or the launcher of a package.json script
	// (.npmrc, .yarnrc.yml, bunfig.toml) reads at start: present, or
	// missing where one that appears would be read.
	Config []Artifact `json:"config"`
	// Native lists the native addons found in the dependency trees.
	Native []TreeFile `json:"native"`
	// Source, when the server runs from source (go run, tsx, ts-node, bun
	// or node on a .ts file), says so and what source is hashed, for people.
	Source string `json:"source,omitempty"`
	// Go is set when the entry or the runtime is a Go binary.
	Go *GoInfo `json:"go,omitempty"`
	// LaunchEnv lists "NAME=value" variables the host adds to the server's
	// environment so that the server does not change its own identity:
	// PYTHONDONTWRITEBYTECODE=1 for a Python server whose environment does
	// not set it (see pythonBytecode). Not an input: it follows from the
	// launch command and the environment, which are.
	LaunchEnv []string `json:"launchEnv,omitempty"`
	// Inferred lists, in words, what Compute had to guess ("runtime node
	// resolved from PATH", "lockfile package-lock.json detected"), so a user
	// can see what was hashed and why.
	Inferred []string `json:"inferred"`
	// Runs lists the command lines the launch runs on its way to the
	// runtime, as followed through wrappers (sh -c, a script's last
	// command, a package.json script), for checks of what runs (the
	// host's self-reload check). Not an input, not recorded.
	Runs [][]string `json:"-"`
	// Scripted lists every simple command of the shell lines and scripts
	// the launch goes through (a package.json script, sh -c's line, a
	// shell script, and the scripts they run in turn), parsed, whether or
	// not the launch could be followed through them ("tsc && node --watch
	// dist/server.js" gives both commands): for the same checks, which
	// must see what a script runs even where its code cannot be told.
	// Not an input, not recorded.
	Scripted [][]string `json:"-"`

	// named is the runtime's path as the launch starts it, symbolic links
	// not followed (a virtual environment's bin/python, a link to
	// /usr/bin/python3.12): where the runtime looks for its own
	// configuration (runtimeConfig). Empty without a launch command.
	named string
	// configs are the configuration files noted for hashConfig.
	configs []configInput

	// unfollowed, when set, says what the launch runs that could not be
	// followed to its code (a shell line with syntax, a package.json
	// script that is not one plain command): the whole project is then
	// code (inferCode), since what it loads cannot be told.
	unfollowed string
}

// Spec says where to look. Explicit fields win over inference.
type Spec struct {
	// Dir is the server's working directory; lockfiles are detected here and
	// relative paths are resolved against it. Empty means the current
	// directory.
	Dir string
	// Command is the launch command ("node", "dist/server.js"). It may be
	// empty when Entry is set.
	Command []string
	// Entry names the entry file. Empty: the first argument of Command that
	// names an existing regular file, else the executable itself.
	Entry string
	// Lockfiles names lockfiles. Nil: those of LockfileNames present in Dir.
	Lockfiles []string
	// Path is the PATH used to resolve Command[0]; empty means $PATH.
	Path string
	// BestEffort records missing files as Missing instead of failing: used to
	// describe what a failed build left behind.
	BestEffort bool
	// Versions, if set, is asked for a runtime's version before the runtime
	// is run; a cache keyed by the runtime's digest saves ~50 ms per hook.
	Versions func(Digest) (string, bool)

	// Environ is the server's environment ("NAME=value"); nil means
	// os.Environ(). PATH, when Path is empty, comes from it too.
	Environ []string
	// EnvNames adds variables to RedirectingEnv.
	EnvNames []string
	// EnvKeyFile is the project's digest key (audit.LoadKey, created if
	// missing): environment values are then digested with HMAC-SHA-256
	// under it ("hmac-sha256:…"), so that a short secret in a value cannot
	// be found by trying values. Empty: unkeyed SHA-256.
	EnvKeyFile string
	// EnvFiles names files such as .env whose content feeds the server.
	EnvFiles []string
	// Data names files the server itself writes that its command line
	// names (a database given as --db ./state.db), as doublestar patterns
	// relative to Dir: they are not hashed as files the launch names
	// (RoleArg), which a server that writes one would otherwise see change
	// its own identity at every write.
	Data []string
	// Code names the project's own code trees or files. Nil: inferred from
	// the entry and the launch command (see Identity.Code); empty: none.
	Code []string
	// Unbuilt records an entry, preload or code tree that the command names
	// and that does not exist as Missing instead of failing: the host may
	// start before the first build.
	Unbuilt bool
	// Deps names dependency trees. Nil: node_modules and .venv's
	// site-packages in Dir, and $VIRTUAL_ENV's, where they exist.
	Deps []string
	// CacheDir, if set, keeps one StatCache per dependency tree there, so
	// an unchanged tree is not read again, and the FileCache of single
	// files (files.json). Any process of the same user can write them:
	// they are a hint for the hook, never read by the host (Caches).
	CacheDir string
	// Caches, if set, replaces CacheDir: the stat caches are kept in
	// memory (Caches), so that no digest comes from a file another
	// process wrote. The host sets it; its first Compute hashes every
	// file it reads.
	Caches *Caches
	// Rehash ignores the stat caches and reads every file.
	Rehash bool
	// Trees, if set, is asked for every code and dependency tree Compute
	// digests, by its absolute root and the options Compute would walk it
	// with (skip lists only). It returns the tree's current Tree, either
	// one it knows (a host that watches the tree, package treewatch; the
	// hook, from a host's answer) or what walk returns; walk is what
	// Compute does without Trees (TreeDigest with the stat cache of
	// CacheDir). The Tree's Digest, Bytes, Files and NativeAddons enter the
	// identity, so they must be exactly what walk would return.
	Trees func(root string, opt TreeOptions, walk func() (Tree, error)) (Tree, error)

	// envTreeLimit, when positive, replaces envTreeLimit (tests).
	envTreeLimit int
}

// TreeSkipDirs are directory names left out of dependency trees: caches a
// tool writes into the tree itself, not code the runtime loads. Python's
// __pycache__ is not among them: Python runs a site-packages .pyc whose
// header matches its source instead of the source, so the bytecode is
// code it loads (the host starts servers with PYTHONDONTWRITEBYTECODE=1,
// so a server it runs writes none).
var TreeSkipDirs = []string{".cache"}

// LockfileNames are the lockfiles detected in Spec.Dir when Spec.Lockfiles is
// nil, in the order they are looked for.
var LockfileNames = []string{
	"package-lock.json", "npm-shrinkwrap.json", "pnpm-lock.yaml", "yarn.lock",
	"go.sum", "uv.lock", "poetry.lock", "Cargo.lock",
}

// Compute hashes the entry, the lockfiles and the runtime that spec
// describes. Errors are *InputError naming the field and the file.
func Compute(spec Spec) (*Identity, error) {
	dir, err := specDir(spec)
	if err != nil {
		return nil, err
	}
	id := &Identity{Dir: dir, Command: spec.Command}

	fc, done := fileCache(spec, id)
	defer done()
	entryPath, runtimePath, launch, err := resolve(spec, dir, id, fc)
	if err != nil {
		return nil, err
	}

	id.Entry, err = artifact(fc, RoleEntry, dir, entryPath, spec.BestEffort || spec.Unbuilt)
	if err != nil {
		return nil, err
	}
	id.Entry.Why = "the file the runtime loads first"
	if runtimePath != "" {
		id.Runtime, err = artifact(fc, RoleRuntime, dir, runtimePath, spec.BestEffort)
		if err != nil {
			return nil, err
		}
		if !id.Runtime.Missing {
			id.Runtime.Version = runtimeVersion(runtimePath, id.Runtime.Digest, spec.Versions)
		}
		id.Runtime.Why = "the binary that executes the entry, resolved through PATH and symlinks"
	}
	runtimeConfig(dir, launch, runtimePath, id)
	if err := hashConfig(fc, dir, id); err != nil {
		return nil, err
	}
	if launch.pycachePrefix && isPython(launch, runtimePath) {
		// No tree of the project's holds what Python would load then.
		return nil, &InputError{Field: "command", Err: errors.New("python -X pycache_prefix: Python would read the bytecode of the project's modules from a directory outside its hashed code, where anything may put it: remove the option (mcpepoch hashes the bytecode in __pycache__)")}
	}
	pythonBytecode(spec, launch, runtimePath, id)
	code := inferCode(spec, dir, entryPath, runtimePath, launch, id)
	if err := tsconfigBases(fc, dir, code, id); err != nil {
		return nil, err
	}
	py := newPycRules(spec, dir, entryPath, runtimePath, id.Runtime.Version, launch)
	if err := hashCode(spec, dir, entryPath, fc, code, spec.BestEffort || spec.Unbuilt, py, id); err != nil {
		return nil, err
	}

	if err := lockfiles(spec, dir, fc, id); err != nil {
		return nil, err
	}

	for _, f := range spec.EnvFiles {
		a, err := artifact(fc, RoleEnvFile, dir, f, true)
		if err != nil {
			return nil, err
		}
		a.Why = "named in env_files: its variables feed the server"
		id.EnvFiles = append(id.EnvFiles, a)
	}
	envDigest := DigestBytes
	if spec.EnvKeyFile != "" {
		key, err := audit.LoadKey(spec.EnvKeyFile)
		if err != nil {
			return nil, err
		}
		envDigest = func(b []byte) Digest { return Digest(key.Digest(b)) }
	}
	id.Env = envArtifacts(spec, dir, []string{runtimePath, abs(dir, entryPath)}, envDigest)
	nested := append(nestedDeps(dir, entryPath, launch, code), userSites(spec, dir, launch, runtimePath, id)...)
	searched, shallow := envDirs(spec, dir, launch, runtimePath, code, nested, fc, id)
	if err := deps(spec, dir, id, append(nested, searched...)); err != nil {
		return nil, err
	}
	addShallow(id, shallow)
	if err := argFiles(fc, dir, entryPath, code, spec.Data, id); err != nil {
		return nil, err
	}
	id.Go = goInfoOf(fc, abs(dir, entryPath), runtimePath)
	return id, nil
}

// fileCache returns the FileCache Compute hashes single files through
// (nil: none, with Rehash) and what to do with it once Compute is done:
// merge it into spec.Caches, or save it in spec.CacheDir, noting in id a
// cache file that could not be used.
func fileCache(spec Spec, id *Identity) (*FileCache, func()) {
	switch {
	case spec.Rehash:
	case spec.Caches != nil:
		fc := spec.Caches.fileCache()
		return fc, func() { spec.Caches.keep(fc) }
	case spec.CacheDir != "":
		fc, err := LoadFileCache(filepath.Join(spec.CacheDir, "files.json"))
		if err != nil {
			id.Inferred = append(id.Inferred, err.Error())
		}
		return fc, func() {
			if err := fc.Save(); err != nil {
				id.Inferred = append(id.Inferred, "file cache not saved: "+err.Error())
			}
		}
	}
	return nil, func() {}
}

// goInfoOf returns the build info of the first of paths that is a Go
// binary, or nil, through the file cache fc when not nil.
func goInfoOf(fc *FileCache, paths ...string) *GoInfo {
	for _, p := range paths {
		if p == "" {
			continue
		}
		if gi := fc.goInfo(p); gi != nil {
			return gi
		}
	}
	return nil
}

// lockfiles hashes spec.Lockfiles, or those of LockfileNames present in
// dir, into id.Lockfiles. A detected name on something that is not a
// regular file is an error.
func lockfiles(spec Spec, dir string, fc *FileCache, id *Identity) error {
	locks := spec.Lockfiles
	if locks == nil {
		for _, name := range LockfileNames {
			fi, err := os.Stat(filepath.Join(dir, name))
			switch {
			case err == nil && !fi.Mode().IsRegular():
				// A lockfile's name on a directory, a FIFO or a device: not
				// silently left out of the identity.
				return &InputError{Field: string(RoleLockfile), Path: name, Err: fmt.Errorf("not a regular file (%s); name the lockfiles in mcpepoch.toml if it is not one", fi.Mode().Type())}
			case err == nil:
				locks = append(locks, name)
				id.Inferred = append(id.Inferred, "lockfile "+name+" detected in "+dir)
			}
		}
	}
	for _, l := range locks {
		a, err := artifact(fc, RoleLockfile, dir, l, spec.BestEffort)
		if err != nil {
			return err
		}
		a.Why = "the dependency versions the build resolved"
		id.Lockfiles = append(id.Lockfiles, a)
	}
	sort.Slice(id.Lockfiles, func(i, j int) bool { return id.Lockfiles[i].Path < id.Lockfiles[j].Path })
	return nil
}

func abs(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

func isRegular(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func artifact(fc *FileCache, role Role, dir, p string, bestEffort bool) (Artifact, error) {
	full := abs(dir, p)
	a := Artifact{Role: role, Path: display(dir, full)}
	if fi, err := os.Stat(full); err == nil && !fi.Mode().IsRegular() {
		// A device or a FIFO would be read forever, or block.
		return Artifact{}, &InputError{Field: string(role), Path: a.Path, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	d, n, err := hashFile(fc, full)
	if err != nil {
		if bestEffort && errors.Is(err, fs.ErrNotExist) {
			a.Missing = true
			return a, nil
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return Artifact{}, &InputError{Field: string(role), Path: a.Path, Err: err}
	}
	a.Digest, a.Size = d, n
	a.stamp = fileStamp(full)
	return a, nil
}

// fileStamp is Artifact.stamp of the file at full (symbolic links
// followed): the SHA-256 of its device, inode and ctime now, "" when it
// cannot be stat'ed.
func fileStamp(full string) Digest {
	var st unix.Stat_t
	if unix.Stat(full, &st) != nil {
		return ""
	}
	k := statOf(&st).key
	return DigestBytes(fmt.Appendf(nil, "%d %d %d", k.dev, k.ino, k.ctime))
}

// Touched returns the paths of the artifacts of next that have the same
// digest as in prev but were replaced or rewritten since prev was
// computed: their stamp (device, inode, ctime of the file, or of every
// file of a tree) differs. Such a file may have held other content in
// between (a swap put back): whatever loaded it then is not vouched for
// by either identity. Artifacts without a stamp on either side are not
// compared.
func Touched(prev, next *Identity) []string {
	if prev == nil || next == nil {
		return nil
	}
	type key struct {
		r Role
		p string
	}
	old := map[key]Artifact{}
	for _, a := range prev.Artifacts() {
		old[key{a.Role, a.Path}] = a
	}
	var out []string
	for _, a := range next.Artifacts() {
		o, ok := old[key{a.Role, a.Path}]
		if ok && o.Digest == a.Digest && o.stamp != "" && a.stamp != "" && o.stamp != a.stamp && !slices.Contains(out, a.Path) {
			out = append(out, a.Path)
		}
	}
	return out
}

// display returns p relative to dir with slashes when it lies inside dir,
// else p itself.
func display(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}

// Artifacts returns every input of id in a fixed order: entry, code,
// lockfiles (by path), runtime, wrappers, dependency trees, env files,
// argument files, configuration files, environment variables. The runtime
// is omitted when unknown.
func (id *Identity) Artifacts() []Artifact {
	out := []Artifact{id.Entry}
	out = append(out, id.Code...)
	out = append(out, id.Lockfiles...)
	if id.Runtime.Path != "" {
		out = append(out, id.Runtime)
	}
	out = append(out, id.Wrappers...)
	out = append(out, id.Deps...)
	out = append(out, id.EnvFiles...)
	out = append(out, id.Args...)
	out = append(out, id.Config...)
	out = append(out, id.Env...)
	return out
}

// LockfileDigest combines the lockfiles' digests into one: the digest of the
// lockfile itself when there is one, else of the lines "<digest> <path>\n"
// sorted by path; the zero Digest when there is none.
func (id *Identity) LockfileDigest() Digest {
	switch len(id.Lockfiles) {
	case 0:
		return ""
	case 1:
		return id.Lockfiles[0].Digest
	}
	var b strings.Builder
	for _, l := range id.Lockfiles {
		fmt.Fprintf(&b, "%s %s\n", l.Digest, l.Path)
	}
	return DigestBytes([]byte(b.String()))
}

// ChangedArtifacts returns the artifacts of next whose digest differs from
// the artifact with the same role and path in prev (or that prev lacks), in
// the order of Artifacts, followed by those prev had and next lacks (with
// Missing set). A nil prev means everything changed. An input missing on
// one side and not tracked on the other did not change: nothing ran from
// it either time (a build output inferred before the first build and not
// after it is not gone).
func ChangedArtifacts(prev, next *Identity) []Artifact {
	if prev == nil {
		return next.Artifacts()
	}
	type key struct {
		r Role
		p string
	}
	old := map[key]Artifact{}
	for _, a := range prev.Artifacts() {
		old[key{a.Role, a.Path}] = a
	}
	var out []Artifact
	for _, a := range next.Artifacts() {
		k := key{a.Role, a.Path}
		o, ok := old[k]
		if !ok && a.Missing {
			continue
		}
		if !ok || o.Digest != a.Digest || o.Missing != a.Missing {
			out = append(out, a)
		}
		delete(old, k)
	}
	for _, a := range prev.Artifacts() {
		if _, gone := old[key{a.Role, a.Path}]; gone && !a.Missing {
			a.Missing = true
			out = append(out, a)
		}
	}
	return out
}

// Changes names what ChangedArtifacts returns, for people: the path, with
// "$" before a variable's name, " (no longer its ROLE)" after an input
// next still hashes in another role only (a file that stopped being the
// entry), and " (gone)" after one next lacks or records as missing, each
// name once.
func Changes(prev, next *Identity) []string {
	var out []string
	nextHas := map[string]bool{}
	nextPath := map[string]bool{}
	for _, a := range next.Artifacts() {
		nextHas[string(a.Role)+" "+a.Path] = true
		if !a.Missing {
			nextPath[a.Path] = true
		}
	}
	for _, a := range ChangedArtifacts(prev, next) {
		name := a.Path
		if a.Role == RoleEnv {
			name = "$" + name
		}
		switch {
		case !nextHas[string(a.Role)+" "+a.Path] && a.Role != RoleEnv && nextPath[a.Path]:
			name += " (no longer its " + string(a.Role) + ")"
		case a.Missing || !nextHas[string(a.Role)+" "+a.Path]:
			name += " (gone)"
		}
		if !slices.Contains(out, name) { // a binary is its own entry and runtime
			out = append(out, name)
		}
	}
	return out
}

// specDir is spec.Dir made absolute, the working directory when empty.
func specDir(spec Spec) (string, error) {
	if spec.Dir == "" {
		return os.Getwd()
	}
	return filepath.Abs(spec.Dir)
}
