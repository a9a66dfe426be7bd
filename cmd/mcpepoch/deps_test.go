package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// heavy are the packages the front must not link (a path, or a path
// ending in "/" for everything under it: net/netip is fine, net is not):
// each costs every hook run its initialisation, or its size, or (net,
// os/user with cgo) a dynamic loader. The core links them.
var heavy = []string{
	"github.com/go-task/",     // Taskfile reading
	"github.com/Masterminds/", // go-task's semver: its init alone is ~0.6 ms
	"mvdan.cc/sh/",
	"go.yaml.in/yaml/",
	"gopkg.in/yaml.v3",
	"github.com/go-webauthn/",
	"github.com/google/jsonschema-go/",
	"github.com/santhosh-tekuri/jsonschema/",
	"golang.org/x/crypto/ssh",
	"golang.org/x/crypto/ssh/",
	"github.com/fsnotify/",
	"github.com/modelcontextprotocol/",
	"net", // with cgo on, its resolver makes the binary dynamically linked
	"os/user",
	"net/http",
	"net/http/",
	"html/template",
	"text/template",
	// This module's packages the hook needs no part of: the grants (and
	// their package's start) come with the whole local API, whose hook
	// part is localapi/hookapi.
	"github.com/mcpepoch/mcpepoch/localapi",
	"github.com/mcpepoch/mcpepoch/grant",
	"github.com/mcpepoch/mcpepoch/host",
	"github.com/mcpepoch/mcpepoch/host/",
}

// TestFrontLinksNothingHeavy: the front's dependency graph, as go list
// gives it for this platform and cgo setting, holds none of heavy.
func TestFrontLinksNothingHeavy(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list gave %q", deps)
	}
	for _, d := range deps {
		for _, h := range heavy {
			if d == h || strings.HasSuffix(h, "/") && strings.HasPrefix(d, h) {
				t.Errorf("the front links %s: keep it in the core (cmd/mcpepoch-core), or in a package record and version do not import", d)
			}
		}
	}
}

// TestFrontIsStatic: on Linux the front comes out statically linked, with
// cgo on as with it off (the tests' build is go's default, cgo on where a
// C compiler is found): no dynamic loader to run at every start.
func TestFrontIsStatic(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the ELF check is Linux's")
	}
	f, err := elf.Open(testenv.Mcpepoch(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the front has a %v segment: it is dynamically linked (something links the C library: net or os/user with cgo)", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the front needs %v", libs)
	}
}
