// Package manifest reads and writes the run manifest, .mcpepoch/manifest.toml:
// what the latest build of a server produced, described by content digests.
//
// The build hook (mcpepoch record) is its only writer; the host never writes
// it (one writer per file) and reads it only as a hint. Writes are atomic
// (temporary file, fsync, rename) and serialized by an advisory lock on
// .mcpepoch/manifest.lock, because go-task's watch mode can start two builds,
// and so two hooks, at once. A manifest that fails to parse or validate is
// reported as a *CorruptError and never overwritten.
//
// The format (schema 1), key by key, is described once, in docs/formats.md
// ("The run manifest"); File, Artifact, Gone and LastOK are its Go form.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/atomicfile"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/safefile"
)

// Schema is the schema version this package writes and accepts.
const Schema = 1

// Build status values.
const (
	StatusOK     = "ok"
	StatusFailed = "failed"
)

// File is a run manifest.
type File struct {
	Schema    int        `toml:"schema" json:"schema"`
	Label     string     `toml:"label" json:"label"`
	Command   []string   `toml:"command" json:"command"`
	Dir       string     `toml:"dir" json:"dir"`
	Inferred  []string   `toml:"inferred,omitempty" json:"inferred,omitempty"`
	Build     Build      `toml:"build" json:"build"`
	Artifacts []Artifact `toml:"artifact" json:"artifact"`
	// Gone lists the inputs the previous build had and this one lacks (a
	// deleted lockfile or node_modules, an unset variable): changes too.
	Gone []Gone `toml:"gone,omitempty" json:"gone,omitempty"`
	// LastOK is set on a failed build: the latest successful one before it.
	LastOK *LastOK `toml:"last_ok,omitempty" json:"lastOk,omitempty"`
}

// Gone names an input of the previous build that this build lacks.
type Gone struct {
	Role build.Role `toml:"role" json:"role"`
	Path string     `toml:"path" json:"path"`
}

// Build describes one run of the hook.
type Build struct {
	ID        epoch.BuildID `toml:"id" json:"id"`
	Completed time.Time     `toml:"completed" json:"completed"`
	Status    string        `toml:"status" json:"status"`
	ExitCode  int           `toml:"exit_code" json:"exitCode"`
}

// Artifact is one hashed input, as build.Artifact plus Changed.
type Artifact struct {
	Role    build.Role   `toml:"role" json:"role"`
	Path    string       `toml:"path" json:"path"`
	Digest  build.Digest `toml:"digest" json:"digest"`
	Size    int64        `toml:"size" json:"size"`
	Version string       `toml:"version,omitempty" json:"version,omitempty"`
	Missing bool         `toml:"missing,omitempty" json:"missing,omitempty"`
	Files   int          `toml:"files,omitzero" json:"files,omitempty"`
	Native  int          `toml:"native,omitzero" json:"native,omitempty"`
	Changed bool         `toml:"changed" json:"changed"`
}

// CorruptError reports a manifest that cannot be read, naming the file and,
// where known, the field. The file is left as it is.
type CorruptError struct {
	Path  string
	Field string
	Err   error
}

func (e *CorruptError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %v", e.Path, e.Field, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// MaxSize is the largest manifest Read accepts, in bytes. A real one holds
// a few dozen artifacts and is a few KiB.
const MaxSize = 4 << 20

// Read reads and validates the manifest at path. A missing file yields an
// error satisfying errors.Is(err, fs.ErrNotExist); anything else wrong is a
// *CorruptError, including a path that is not a regular file (a FIFO, a
// device, a symbolic link: only record writes the manifest, by rename) or
// a file over MaxSize. Read never blocks on what path names.
func Read(path string) (*File, error) {
	data, err := safefile.ReadFileNoFollow(path, MaxSize)
	if r := safefile.Refusal(err); r != nil {
		return nil, &CorruptError{Path: path, Err: r}
	}
	if err != nil {
		return nil, err
	}
	// One decode at a time, so that of two readers of the manifest a
	// build just wrote (a host's manifest watch and its build signal) the
	// second finds it decoded.
	decoded.Lock()
	defer decoded.Unlock()
	if decoded.f != nil && bytes.Equal(data, decoded.data) {
		return decoded.f.clone(), nil
	}
	f, err := decode(path, data)
	if err != nil {
		return nil, err
	}
	if err := f.validate(); err != nil {
		err.Path = path
		return nil, err
	}
	decoded.data, decoded.f = data, f.clone()
	return f, nil
}

// decode decodes the manifest's bytes: in the form the hook writes
// without reflection (decodeFile), else with the TOML library, whose
// errors name the line or the unknown key.
func decode(path string, data []byte) (*File, error) {
	if f, ok := decodeFile(data); ok {
		return f, nil
	}
	var f File
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &CorruptError{Path: path, Err: fmt.Errorf("line %d: %s", pe.Position.Line, pe.Message)}
		}
		return nil, &CorruptError{Path: path, Err: err}
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, &CorruptError{Path: path, Field: und[0].String(), Err: errors.New("unknown key")}
	}
	return &f, nil
}

// decoded is the manifest Read decoded last, by its exact bytes: a host
// reads the manifest a build hook has just written for its manifest watch
// and again for the build signal, and decoding it with the TOML library
// (0.3 ms for a manifest of five artifacts; decodeFile reads the form the
// hook writes in a tenth of that) was most of what each read cost. Read
// returns copies (File.clone), so that no caller sees another's changes.
var decoded struct {
	sync.Mutex
	data []byte
	f    *File
}

// clone returns a copy of f that shares no slice with it.
func (f *File) clone() *File {
	c := *f
	c.Command = slices.Clone(f.Command)
	c.Inferred = slices.Clone(f.Inferred)
	c.Artifacts = slices.Clone(f.Artifacts)
	c.Gone = slices.Clone(f.Gone)
	if f.LastOK != nil {
		l := *f.LastOK
		l.Artifacts = slices.Clone(l.Artifacts)
		c.LastOK = &l
	}
	return &c
}

func (f *File) validate() *CorruptError {
	if f.Schema != Schema {
		return &CorruptError{Field: "schema", Err: fmt.Errorf("schema %d, want %d", f.Schema, Schema)}
	}
	if f.Build.ID == "" {
		return &CorruptError{Field: "build.id", Err: errors.New("missing")}
	}
	if f.Build.Status != StatusOK && f.Build.Status != StatusFailed {
		return &CorruptError{Field: "build.status", Err: fmt.Errorf("%q is not %q or %q", f.Build.Status, StatusOK, StatusFailed)}
	}
	if err := validateArtifacts("artifact", f.Artifacts); err != nil {
		return err
	}
	if f.LastOK != nil {
		if err := validateArtifacts("last_ok.artifact", f.LastOK.Artifacts); err != nil {
			return err
		}
	}
	for i, g := range f.Gone {
		if g.Path == "" || g.Role == "" {
			return &CorruptError{Field: fmt.Sprintf("gone[%d]", i), Err: errors.New("role and path are required")}
		}
	}
	return nil
}

// validateArtifacts checks the artifacts of table name.
func validateArtifacts(name string, artifacts []Artifact) *CorruptError {
	for i, a := range artifacts {
		field := fmt.Sprintf("%s[%d]", name, i)
		switch a.Role {
		case build.RoleEntry, build.RoleCode, build.RoleLockfile, build.RoleRuntime, build.RoleWrapper, build.RoleDeps, build.RoleEnv, build.RoleEnvFile, build.RoleArg, build.RoleConfig:
		default:
			return &CorruptError{Field: field + ".role", Err: fmt.Errorf("unknown role %q", a.Role)}
		}
		if a.Path == "" {
			return &CorruptError{Field: field + ".path", Err: errors.New("missing")}
		}
		if a.Missing {
			continue
		}
		if _, err := build.ParseDigest(string(a.Digest)); err != nil {
			return &CorruptError{Field: field + ".digest", Err: err}
		}
	}
	return nil
}

// Publish validates f and writes it to path atomically (mode 0644),
// creating the directory (mode 0700) if needed, with the fsync after the
// rename (atomicfile.Publish): once it returns, readers see the new
// manifest whole, and sync, to be called once, makes it durable. Callers
// hold the Lock until Publish returns, not until sync does. Until sync
// returns a crash of the machine may also leave an empty manifest where
// the file system does not order a rename after the file's data (ext4 and
// btrfs do): record then reports it corrupt, and moving it aside starts
// anew, as after any corrupt manifest. The build hook takes that narrow
// window to hide the fsync behind the hosts' answer. A crash right after
// sync may bring the previous manifest back, which only costs the next
// build a longer list of changes: hosts recompute the identity themselves.
func Publish(path string, f *File) (sync func() error, err error) {
	b, err := encode(path, f)
	if err != nil {
		return nil, err
	}
	return atomicfile.Publish(path, b, 0o644)
}

// header is the first line of every manifest.
const header = "# Run manifest written by `mcpepoch record` after each build. Do not edit.\n"

// encode validates f and returns the file's bytes, making path's
// directory if needed.
func encode(path string, f *File) ([]byte, error) {
	if err := f.validate(); err != nil {
		err.Path = path
		return nil, err
	}
	b := make([]byte, 0, 1024+512*len(f.Artifacts))
	b = append(b, header...)
	b, ok := appendFile(b, f)
	if !ok {
		buf := bytes.NewBuffer(b)
		if err := toml.NewEncoder(buf).Encode(f); err != nil {
			return nil, fmt.Errorf("encode %s: %w", path, err)
		}
		b = buf.Bytes()
	}
	if err := layout.MkdirAll(filepath.Dir(path)); err != nil {
		return nil, err
	}
	return b, nil
}

// New describes identity id as built by hook run buildID at t with the
// build's exit code, marking each artifact changed relative to prev (nil:
// every artifact changed).
func New(label string, buildID epoch.BuildID, t time.Time, exitCode int, id *build.Identity, prev *File) *File {
	f := &File{
		Schema:   Schema,
		Label:    label,
		Command:  id.Command,
		Dir:      id.Dir,
		Inferred: id.Inferred,
		Build:    Build{ID: buildID, Completed: t.UTC().Truncate(time.Second), Status: StatusOK, ExitCode: exitCode},
	}
	if exitCode != 0 {
		f.Build.Status = StatusFailed
		f.LastOK = lastOK(prev)
	}
	var prevID *build.Identity
	if prev != nil {
		prevID = prev.Identity()
	}
	changed := map[string]bool{}
	has := map[string]bool{}
	for _, a := range id.Artifacts() {
		has[string(a.Role)+" "+a.Path] = true
	}
	for _, c := range build.ChangedArtifacts(prevID, id) {
		k := string(c.Role) + " " + c.Path
		changed[k] = true
		if !has[k] {
			f.Gone = append(f.Gone, Gone{Role: c.Role, Path: c.Path})
		}
	}
	for _, a := range id.Artifacts() {
		f.Artifacts = append(f.Artifacts, Artifact{
			Role: a.Role, Path: a.Path, Digest: a.Digest, Size: a.Size,
			Version: a.Version, Missing: a.Missing, Files: a.Files, Native: a.Native, Changed: changed[string(a.Role)+" "+a.Path],
		})
	}
	return f
}

// Identity returns the identity the manifest records (without Inferred).
func (f *File) Identity() *build.Identity {
	id := &build.Identity{Dir: f.Dir, Command: f.Command}
	for _, a := range f.Artifacts {
		ba := build.Artifact{Role: a.Role, Path: a.Path, Digest: a.Digest, Size: a.Size, Version: a.Version, Missing: a.Missing, Files: a.Files, Native: a.Native}
		switch a.Role {
		case build.RoleEntry:
			id.Entry = ba
		case build.RoleCode:
			id.Code = append(id.Code, ba)
		case build.RoleLockfile:
			id.Lockfiles = append(id.Lockfiles, ba)
		case build.RoleRuntime:
			id.Runtime = ba
		case build.RoleWrapper:
			id.Wrappers = append(id.Wrappers, ba)
		case build.RoleDeps:
			id.Deps = append(id.Deps, ba)
		case build.RoleEnv:
			id.Env = append(id.Env, ba)
		case build.RoleEnvFile:
			id.EnvFiles = append(id.EnvFiles, ba)
		case build.RoleArg:
			id.Args = append(id.Args, ba)
		case build.RoleConfig:
			id.Config = append(id.Config, ba)
		}
	}
	return id
}

// Changed returns the paths of the artifacts marked changed, in file order,
// then those gone, with " (gone)" after those gone or missing, each once,
// as build.Changes names them.
//
// Environment variables are left out: the hook runs with another
// environment than the server (a shell, a Taskfile), so only the hosts,
// which compute the identity in the server's environment, report them.
func (f *File) Changed() []string {
	var out []string
	add := func(role build.Role, name, suffix string) {
		if role == build.RoleEnv {
			return
		}
		if name += suffix; !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, a := range f.Artifacts {
		switch {
		case a.Changed && a.Missing:
			add(a.Role, a.Path, " (gone)")
		case a.Changed:
			add(a.Role, a.Path, "")
		}
	}
	for _, g := range f.Gone {
		add(g.Role, g.Path, " (gone)")
	}
	return out
}

// RuntimeVersion returns the version recorded for the runtime with digest d,
// for use as build.Spec.Versions.
func (f *File) RuntimeVersion(d build.Digest) (string, bool) {
	if f == nil {
		return "", false
	}
	for _, a := range f.Artifacts {
		if a.Role == build.RoleRuntime && a.Digest == d && a.Version != "" {
			return a.Version, true
		}
	}
	return "", false
}

// IsNotExist reports whether err from Read means there is no manifest yet.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
