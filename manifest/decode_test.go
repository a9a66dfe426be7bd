package manifest

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
)

// libraryDecode decodes data with the TOML library alone.
func libraryDecode(data []byte) (*File, error) {
	var f File
	_, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	return &f, err
}

// TestDecodeFileMatchesLibrary checks that decodeFile reads every manifest
// encode writes, as the library does, and that bytes it accepts after any
// one-byte change (replaced, inserted or deleted) are read as the library
// reads them: it never reads a file otherwise than the library would.
func TestDecodeFileMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	read, accepted := 0, 0
	for i := range 2000 {
		f := randomFile(r)
		if i%10 != 0 {
			f = validUTF8(f) // else the library refuses nearly all
		}
		body, ok := appendFile(nil, f)
		if !ok {
			continue
		}
		data := append([]byte(header), body...)
		want, werr := libraryDecode(data)
		got, ok := decodeFile(data)
		if werr != nil {
			if ok {
				t.Fatalf("case %d: decodeFile read what the library refuses (%v):\n%s", i, werr, data)
			}
			continue // not UTF-8: the library refuses it, and so does decodeFile
		}
		if !ok {
			t.Fatalf("case %d: decodeFile did not read what encode wrote:\n%s", i, data)
		}
		read++
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: decodeFile read\n%#v\nthe library\n%#v", i, got, want)
		}
		for range 20 {
			bad := mutate(r, data)
			got, ok := decodeFile(bad)
			if !ok {
				continue
			}
			accepted++
			want, err := libraryDecode(bad)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d: decodeFile read changed bytes as\n%#v\nthe library as\n%#v (%v)\n%q", i, got, want, err, bad)
			}
		}
	}
	if read < 900 {
		t.Errorf("decodeFile read %d manifests, want at least 900", read)
	}
	t.Logf("read %d manifests; accepted %d changed ones, each read as the library reads it", read, accepted)
}

// validUTF8 returns f with every string made valid UTF-8.
func validUTF8(f *File) *File {
	v := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
	vs := func(ss []string) {
		for i := range ss {
			ss[i] = v(ss[i])
		}
	}
	va := func(as []Artifact) {
		for i := range as {
			a := &as[i]
			a.Path, a.Digest, a.Version = v(a.Path), build.Digest(v(string(a.Digest))), v(a.Version)
		}
	}
	f.Label, f.Dir, f.Build.ID = v(f.Label), v(f.Dir), epoch.BuildID(v(string(f.Build.ID)))
	vs(f.Command)
	vs(f.Inferred)
	va(f.Artifacts)
	for i := range f.Gone {
		f.Gone[i].Path = v(f.Gone[i].Path)
	}
	if f.LastOK != nil {
		f.LastOK.ID = epoch.BuildID(v(string(f.LastOK.ID)))
		va(f.LastOK.Artifacts)
	}
	return f
}

// mutate returns data with one byte replaced, inserted or deleted.
func mutate(r *rand.Rand, data []byte) []byte {
	b := append([]byte{}, data...)
	i := r.IntN(len(b))
	chars := []byte("\"\\ =\n[]{}.,0123456789aeftrux#'\t\x00\x7f")
	c := chars[r.IntN(len(chars))]
	if r.IntN(4) == 0 {
		c = byte(r.IntN(256))
	}
	switch r.IntN(3) {
	case 0:
		b[i] = c
	case 1:
		b = append(b[:i], append([]byte{c}, b[i:]...)...)
	default:
		b = append(b[:i], b[i+1:]...)
	}
	return b
}

// BenchmarkDecode is what reading a typical manifest (six artifacts) costs
// the build hook and a host, next to the library's decoder.
func BenchmarkDecode(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	f := validUTF8(randomFile(r))
	f.Command, f.LastOK, f.Build.Completed = []string{"node", "dist/server.js"}, nil, f.Build.Completed.UTC().Truncate(time.Second)
	f.Artifacts = nil
	for len(f.Artifacts) < 6 {
		f.Artifacts = append(f.Artifacts, validUTF8(&File{Artifacts: randomArtifacts(r, 1)}).Artifacts...)
	}
	body, ok := appendFile(nil, f)
	if !ok {
		b.Fatal("not written by appendFile")
	}
	data := append([]byte(header), body...)
	if _, err := libraryDecode(data); err != nil {
		b.Fatal(err)
	}
	b.Run("decodeFile", func(b *testing.B) {
		for b.Loop() {
			if _, ok := decodeFile(data); !ok {
				b.Fatal("not read")
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		for b.Loop() {
			if _, err := libraryDecode(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
