package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/trust"
)

func TestMain(m *testing.M) {
	testenv.OwnSession() // the person checks see other packages' hosts
	os.Exit(m.Run())
}

// TestDemo runs the whole demo in both protocol eras: it builds mcpepoch
// and the example server, drives a real MCP client through a real host
// across a rebuild, and checks the narrative a person would read.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpepoch and the example server and runs them; skipped with -short")
	}
	// Each run has its own temporary directory, project, binaries and
	// host: the two eras run side by side.
	for _, protocol := range []string{defaultProtocol, "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			testDemo(t, protocol)
		})
	}
}

func testDemo(t *testing.T, protocol string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, &out, options{Protocol: protocol, Keep: true})
	t.Logf("demo output:\n%s", out.String())
	kept := regexp.MustCompile(`(?m)kept (/\S+)$`).FindStringSubmatch(out.String())
	if kept != nil {
		t.Cleanup(func() { os.RemoveAll(kept[1]) })
	}
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	// The host's policy floor for the temporary project is not left in
	// the user's config directory.
	if dir, err := trust.DefaultDir(); kept != nil && err == nil {
		if _, err := os.Stat(trust.FloorPath(dir, filepath.Join(kept[1], "project"))); err == nil {
			t.Errorf("the demo left its project's policy floor in %s", dir)
		}
	}

	// Key lines, in the order they must appear.
	want := []string{
		`(?m)^   \[hook\] +build complete: first build recorded$`,
		`(?m)^   \[hook\] +no host reachable over the socket; hosts watching the manifest will see this build$`,
		`(?m)^== 3\. `,
		`(?m)^   \[client\] +connected: protocol ` + regexp.QuoteMeta(protocol) + `, server inventory-go A$`,
		`(?m)^   \[client\] +← error -31010: authorization_required: `,
		`(?m)^   \[approve\] +approved: grant [0-9A-Z]{26} `,
		`(?m)^   \[client\] +← sku=widget quantity=5 revision=A$`,
		`(?m)^   \[client\] +← sku=gadget quantity=3 revision=A$`,
		`(?m)^== 5\. `,
		`(?m)^   \[server\] +revision=B pid=[0-9]+ `,
		`(?m)^   \[hook\] +server restarted: epoch [0-9A-Z]{26} → [0-9A-Z]{26}, pid [0-9]+ → [0-9]+(; .*)?$`,
		`(?m)^== 6\. `,
		`(?m)^   \[client\] +← 4 tools: inventory_adjust, inventory_history, inventory_lookup, inventory_order$`,
		`(?m)^   \[client\] +← error -31011: authorization_stale: `,
		`(?m)^   \[approve\] +approved: grant [0-9A-Z]{26} `,
		`(?m)^   \[client\] +← sku=widget revision=B\n   \[client\] +  delta=\+5 quantity=5 revision=A$`,
		`(?m)^   \[client\] +← sku=widget quantity=5 revision=B$`,
		`(?m)^== 7\. `,
		`(?m)^   \[hook\] +build complete: nothing changed$`,
		`(?m)^   \[hook\] +running server unchanged: pid=[0-9]+ epoch=[0-9A-Z]{26}$`,
		`(?m)^   \[client\] +← sku=widget quantity=5 revision=B$`,
		`(?m)^== 8\. `,
		`(?m)^   \[status\] +host [0-9A-Z]{26} \(inventory-demo\): ready for `,
		`(?m)^   demo complete in `,
	}
	rest := out.Bytes()
	for _, w := range want {
		loc := regexp.MustCompile(w).FindIndex(rest)
		if loc == nil {
			t.Fatalf("output lacks %s after the previous key line", w)
		}
		rest = rest[loc[1]:]
	}
	// The client was told exactly once: at the restart, not at the
	// identical rebuild.
	if n := len(regexp.MustCompile(`(?m)^   \[client\] +← notifications/tools/list_changed$`).FindAll(out.Bytes(), -1)); n != 1 {
		t.Errorf("the client saw notifications/tools/list_changed %d times, want 1", n)
	}
}

func TestModuleRoot(t *testing.T) {
	root, err := moduleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "mcpepoch")); err != nil {
		t.Errorf("moduleRoot(.) = %s, which has no cmd/mcpepoch: %v", root, err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := moduleRoot(other); err == nil && got != root {
		t.Errorf("moduleRoot(%s) = %s, want an error or the repository root", other, got)
	}
}
