package host

import (
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/build"
)

// runtimeDrift names another binary, the same bytes at another path, and
// the same binary loading other dependency trees; nothing when the build
// and the host agree or either runtime is unknown.
func TestRuntimeDrift(t *testing.T) {
	t.Parallel()
	py := build.Artifact{Role: build.RoleRuntime, Path: "/usr/bin/python3.11", Digest: build.Digest("sha256:" + strings.Repeat("a", 64)), Version: "Python 3.11.2"}
	other := build.Artifact{Role: build.RoleRuntime, Path: "/opt/py/bin/python3.12", Digest: build.Digest("sha256:" + strings.Repeat("b", 64)), Version: "Python 3.12.1"}
	copied := py
	copied.Path = "/work/venv/bin/python3"
	venv := []build.Artifact{{Role: build.RoleDeps, Path: ".venv/lib/python3.11/site-packages"}}
	system := append(venv[:1:1], build.Artifact{Role: build.RoleDeps, Path: "/usr/lib/python3/dist-packages"})
	id := func(rt build.Artifact, deps []build.Artifact) *build.Identity {
		return &build.Identity{Command: []string{"python3", "server.py"}, Runtime: rt, Deps: deps}
	}
	for _, tc := range []struct {
		name           string
		built, running *build.Identity
		want           []string // substrings of the one line; nil: no line
	}{
		{"same", id(py, venv), id(py, venv), nil},
		{"unknown", id(build.Artifact{}, venv), id(py, venv), nil},
		{"another binary", id(py, venv), id(other, venv), []string{"the runtime differs: the build B1 resolved python3 to /usr/bin/python3.11 (Python 3.11.2, aaaaaaaaaaaa)",
			"the host resolved it to /opt/py/bin/python3.12 (Python 3.12.1, bbbbbbbbbbbb) and runs that", "; fix: give the client the build's PATH"}},
		{"same bytes elsewhere", id(copied, venv), id(py, venv), []string{"resolved python3 to /work/venv/bin/python3", "the same bytes at another path"}},
		{"another environment", id(py, venv), id(py, system), []string{"the runtime's environment differs: python3 resolved to /usr/bin/python3.11",
			"recorded the dependency trees [.venv/lib/python3.11/site-packages]", "loads [.venv/lib/python3.11/site-packages, /usr/lib/python3/dist-packages]", "; fix: "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runtimeDrift(tc.built, "B1", tc.running)
			if tc.want == nil {
				if len(got) != 0 {
					t.Errorf("got %q, want nothing", got)
				}
				return
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], "running ≠ built: the runtime") {
				t.Fatalf("got %q, want one line", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("%s\nwant it to contain %q", got[0], w)
				}
			}
		})
	}
}
