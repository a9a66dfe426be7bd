package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The environment part of the identity is the host's: a hook run from a
// shell whose environment differs from the server's (here
// NODE_EXTRA_CA_CERTS, set in the shell only) does not say it changed, and
// what a host reports changed is what the host computed in its own
// environment.
func TestEnvChangesAreTheHosts(t *testing.T) {
	t.Parallel()
	dir := ideTempDir(t)
	srv := filepath.Join(dir, "bin", "srv")
	ideGoBuild(t, srv)
	ideWrite(t, dir, "mcpepoch.toml", "label = \"env\"\ncommand = [\"./bin/srv\"]\n", 0o644)
	ideMust(t, dir, nil, "record")
	cs, _ := ideHost(t, dir, []string{"INVENTORY_DATA_DIR=" + filepath.Join(dir, "data")}, "--", "./bin/srv")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatalf("tools/list: %v", err)
	}

	shell := []string{"NODE_EXTRA_CA_CERTS=/etc/ssl/extra.pem"}
	_, e := ideMust(t, dir, shell, "record")
	if !strings.Contains(e, "build complete: nothing changed\n") || !strings.Contains(e, "running server unchanged") || strings.Contains(e, "NODE_EXTRA_CA_CERTS") {
		t.Errorf("record from a shell with another environment:\n%s", e)
	}

	ideGoBuild(t, srv+".new", "-ldflags=-X main.revision=B")
	if err := os.Rename(srv+".new", srv); err != nil {
		t.Fatal(err)
	}
	o, e := ideMust(t, dir, shell, "record", "--json")
	var out struct {
		Changed []string `json:"changed"`
		Hosts   []struct {
			Result  string   `json:"result"`
			Changed []string `json:"changed"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(o), &out); err != nil {
		t.Fatalf("record --json: %v\n%s", err, o)
	}
	if !slices.Equal(out.Changed, []string{"bin/srv"}) || len(out.Hosts) != 1 || out.Hosts[0].Result != "restarted" ||
		!slices.Equal(out.Hosts[0].Changed, []string{"bin/srv"}) {
		t.Errorf("record --json after a rebuild: changed %q, hosts %+v, want [bin/srv] and one host restarted on [bin/srv]\n%s", out.Changed, out.Hosts, e)
	}
}
