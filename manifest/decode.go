package manifest

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/jsonstr"
)

// decodeFile decodes a manifest in the exact form encode writes (header
// and appendFile), without reflection: the TOML library took 0.3 ms per
// manifest, which every build hook and every host's build signal read. It
// reports false for anything else, a manifest edited by hand, written by
// another version or damaged: Read then decodes it with the library, which
// says what is wrong. It accepts only bytes that appendFile writes again
// from what it decoded, so it never reads them otherwise than the library
// would (TestDecodeFileMatchesLibrary).
func decodeFile(data []byte) (*File, bool) {
	if !bytes.HasPrefix(data, []byte(header)) || !utf8.Valid(data) {
		return nil, false
	}
	body := data[len(header):]
	f := &File{}
	table := ""
	var a *Artifact
	for s := string(body); s != ""; {
		line, rest, _ := strings.Cut(s, "\n")
		s = rest
		line = strings.TrimLeft(line, " ")
		switch {
		case line == "":
			continue
		case line == "[build]", line == "[last_ok]":
			table = line[1 : len(line)-1]
			if table == "last_ok" {
				f.LastOK = &LastOK{}
			}
			continue
		case line == "[[artifact]]":
			table = "artifact"
			f.Artifacts = append(f.Artifacts, Artifact{})
			a = &f.Artifacts[len(f.Artifacts)-1]
			continue
		case line == "[[last_ok.artifact]]" && f.LastOK != nil:
			table = "artifact"
			f.LastOK.Artifacts = append(f.LastOK.Artifacts, Artifact{})
			a = &f.LastOK.Artifacts[len(f.LastOK.Artifacts)-1]
			continue
		case line == "[[gone]]":
			table = "gone"
			f.Gone = append(f.Gone, Gone{})
			continue
		}
		key, val, ok := strings.Cut(line, " = ")
		if !ok || !f.set(table, a, key, val) {
			return nil, false
		}
	}
	again, ok := appendFile(make([]byte, 0, len(body)), f)
	if !ok || !bytes.Equal(again, body) {
		return nil, false
	}
	return f, true
}

// set sets the key of table (a the artifact being read) to the TOML value
// val, reporting false for a key or value appendFile does not write.
func (f *File) set(table string, a *Artifact, key, val string) bool {
	var ok bool
	switch table + "." + key {
	case ".schema":
		f.Schema, ok = intValue(val)
	case ".label":
		f.Label, ok = stringValue(val)
	case ".command":
		f.Command, ok = stringsValue(val)
	case ".dir":
		f.Dir, ok = stringValue(val)
	case ".inferred":
		f.Inferred, ok = stringsValue(val)
	case "build.id":
		var id string
		id, ok = stringValue(val)
		f.Build.ID = epoch.BuildID(id)
	case "build.completed":
		f.Build.Completed, ok = timeValue(val)
	case "build.status":
		f.Build.Status, ok = stringValue(val)
	case "build.exit_code":
		f.Build.ExitCode, ok = intValue(val)
	case "last_ok.id":
		var id string
		id, ok = stringValue(val)
		f.LastOK.ID = epoch.BuildID(id)
	case "last_ok.completed":
		f.LastOK.Completed, ok = timeValue(val)
	case "gone.role", "gone.path":
		var v string
		v, ok = stringValue(val)
		g := &f.Gone[len(f.Gone)-1]
		if key == "role" {
			g.Role = build.Role(v)
		} else {
			g.Path = v
		}
	default:
		return table == "artifact" && a.set(key, val)
	}
	return ok
}

// set is File.set for the keys of an artifact.
func (a *Artifact) set(key, val string) bool {
	var ok bool
	var s string
	switch key {
	case "role":
		s, ok = stringValue(val)
		a.Role = build.Role(s)
	case "path":
		a.Path, ok = stringValue(val)
	case "digest":
		s, ok = stringValue(val)
		a.Digest = build.Digest(s)
	case "size":
		a.Size, ok = int64Value(val)
	case "version":
		a.Version, ok = stringValue(val)
	case "missing":
		a.Missing, ok = val == "true", val == "true"
	case "files":
		a.Files, ok = intValue(val)
	case "native":
		a.Native, ok = intValue(val)
	case "changed":
		a.Changed, ok = val == "true", val == "true" || val == "false"
	}
	return ok
}

func int64Value(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func intValue(v string) (int, bool) {
	n, err := strconv.ParseInt(v, 10, strconv.IntSize)
	return int(n), err == nil
}

func timeValue(v string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, v)
	return t.UTC(), err == nil && strings.HasSuffix(v, "Z")
}

// stringValue decodes a TOML basic string that is the whole of v.
func stringValue(v string) (string, bool) {
	s, rest, ok := quoted(v)
	return s, ok && rest == ""
}

// stringsValue decodes a TOML array of basic strings that is the whole
// of v, as appendStrings writes it.
func stringsValue(v string) ([]string, bool) {
	if v == "[]" || len(v) < 2 || v[0] != '[' {
		return nil, false
	}
	var out []string
	v = v[1:]
	for {
		s, rest, ok := quoted(v)
		if !ok {
			return nil, false
		}
		out = append(out, s)
		if rest == "]" {
			return out, true
		}
		if v, ok = strings.CutPrefix(rest, ", "); !ok {
			return nil, false
		}
	}
}

// quoted decodes the basic string v starts with, with the escapes
// appendQuoted writes, and returns what follows it. Those escapes (\" \\
// \b \t \n \f \r and \u00XX) mean the same in a TOML basic string and a
// JSON string, so jsonstr reads them. An escape that only one of the two
// has, or one appendQuoted does not write (\/, \e, \U, \u0041, an
// escaped surrogate), is refused here or by decodeFile, which writes
// what it decoded again and compares.
func quoted(v string) (s, rest string, ok bool) {
	if v == "" || v[0] != '"' {
		return "", "", false
	}
	end, f := jsonstr.Scan(v, 0)
	if end < 0 {
		return "", "", false
	}
	if f&jsonstr.Escaped == 0 {
		return v[1 : end-1], v[end:], true // nothing escaped: no copy
	}
	b, ok := jsonstr.Append(make([]byte, 0, end-2), v[1:end-1])
	return string(b), v[end:], ok
}
