package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// heavy are the packages (a path, or a path ending in "/" for everything
// under it) the front must not link: each costs every hook run its
// initialisation, or its size, or (net, os/user with cgo) a dynamic
// loader. The core links them.
var heavy = []string{
	"github.com/go-task/",           // Taskfile reading
	"github.com/Masterminds/semver", // go-task's; its init alone is ~0.6 ms
	"mvdan.cc/sh/",
	"go.yaml.in/yaml/",
	"gopkg.in/yaml.v3",
	"github.com/go-webauthn/",
	"github.com/google/jsonschema-go/",
	"github.com/santhosh-tekuri/jsonschema/",
	"golang.org/x/crypto/ssh",
	"github.com/fsnotify/",
	"github.com/modelcontextprotocol/",
	"net/http",
	"html/template",
	"text/template",
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
			if d == h || strings.HasSuffix(h, "/") && strings.HasPrefix(d, h) || strings.HasPrefix(d, h+"/") {
				t.Errorf("the front links %s: keep it in the core (cmd/mcpepoch-core), or in a package record and version do not import", d)
			}
		}
	}
}
