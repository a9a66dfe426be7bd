package manifest

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
)

// TestAppendFileMatchesEncoder holds appendFile to the bytes the TOML
// library's encoder writes, over manifests of every shape with strings of
// every byte value, and checks that it does write the usual shapes.
func TestAppendFileMatchesEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for i := range 3000 {
		f := randomFile(r)
		var want bytes.Buffer
		if err := toml.NewEncoder(&want).Encode(f); err != nil {
			t.Fatal(err)
		}
		got, ok := appendFile(nil, f)
		if !ok {
			if len(got) != 0 {
				t.Fatalf("case %d: appendFile declined but appended %q", i, got)
			}
			continue
		}
		fast++
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("case %d: appendFile wrote\n%s\nthe encoder\n%s", i, got, want.Bytes())
		}
	}
	if fast < 1500 {
		t.Errorf("appendFile wrote %d of 3000 manifests, want at least 1500: the usual shapes must not fall back", fast)
	}
}

// randomString is up to 12 bytes drawn from every byte value, control
// characters, quotes, backslashes and multi-byte UTF-8 weighted up.
func randomString(r *rand.Rand) string {
	pick := []string{"\"", "\\", "\b", "\t", "\n", "\f", "\r", "\x00", "\x1f", "\x7f", "é", "€", "𝄞", "\xff", "a", "/", " ", "'", "="}
	var b []byte
	for range r.IntN(13) {
		if r.IntN(2) == 0 {
			b = append(b, pick[r.IntN(len(pick))]...)
		} else {
			b = append(b, byte(r.IntN(256)))
		}
	}
	return string(b)
}

func randomStrings(r *rand.Rand, max int) []string {
	n := r.IntN(max + 1)
	if n == 0 && r.IntN(2) == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = randomString(r)
	}
	return ss
}

func randomArtifacts(r *rand.Rand, max int) []Artifact {
	n := r.IntN(max + 1)
	if n == 0 && r.IntN(2) == 0 {
		return nil
	}
	roles := []build.Role{build.RoleEntry, build.RoleCode, build.RoleLockfile, build.RoleRuntime, build.RoleWrapper, build.RoleDeps, build.RoleEnv, build.RoleEnvFile, build.RoleArg, build.RoleConfig}
	as := make([]Artifact, n)
	for i := range as {
		a := &as[i]
		a.Role, a.Path = roles[r.IntN(len(roles))], randomString(r)
		a.Digest = build.Digest("sha256:" + randomString(r))
		a.Size = r.Int64N(1<<40) - 5
		if r.IntN(3) == 0 {
			a.Version = randomString(r)
		}
		a.Missing, a.Changed = r.IntN(3) == 0, r.IntN(2) == 0
		if r.IntN(2) == 0 {
			a.Files, a.Native = r.IntN(100000)-3, r.IntN(5)
		}
	}
	return as
}

func randomTime(r *rand.Rand) time.Time {
	t := time.Unix(r.Int64N(4e9), 0).UTC()
	switch r.IntN(10) {
	case 0:
		t = t.Add(time.Duration(r.IntN(1e9))) // fractional seconds
	case 1:
		t = t.In(time.FixedZone("", 7200)) // not UTC: left to the library
	}
	return t
}

func randomFile(r *rand.Rand) *File {
	f := &File{
		Schema: r.IntN(3), Label: randomString(r), Command: randomStrings(r, 4), Dir: randomString(r),
		Inferred: randomStrings(r, 3),
		Build: Build{ID: epoch.BuildID(randomString(r)), Completed: randomTime(r),
			Status: []string{StatusOK, StatusFailed}[r.IntN(2)], ExitCode: r.IntN(300) - 150},
		Artifacts: randomArtifacts(r, 6),
	}
	if r.IntN(4) == 0 {
		f.Gone = []Gone{}
		for range r.IntN(3) {
			f.Gone = append(f.Gone, Gone{Role: build.RoleLockfile, Path: randomString(r)})
		}
	}
	if r.IntN(3) == 0 {
		f.LastOK = &LastOK{ID: epoch.BuildID(randomString(r)), Completed: randomTime(r), Artifacts: randomArtifacts(r, 3)}
	}
	return f
}

// BenchmarkEncode is what writing a typical manifest (six artifacts)
// costs the build hook, next to the library's encoder it replaces.
func BenchmarkEncode(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	f := randomFile(r)
	f.Command, f.LastOK, f.Build.Completed = []string{"node", "dist/server.js"}, nil, time.Now().UTC().Truncate(time.Second)
	f.Artifacts = nil
	for len(f.Artifacts) < 6 {
		f.Artifacts = append(f.Artifacts, randomArtifacts(r, 1)...)
	}
	b.Run("appendFile", func(b *testing.B) {
		for b.Loop() {
			if _, ok := appendFile(nil, f); !ok {
				b.Fatal("fell back")
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		for b.Loop() {
			if err := toml.NewEncoder(&bytes.Buffer{}).Encode(f); err != nil {
				b.Fatal(err)
			}
		}
	})
}
