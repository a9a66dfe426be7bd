package host

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/trust"
)

// A scope the floor delivers through the broker is not put in the
// server's environment when mcpepoch.toml switches it to env (with
// per_call dropped, as env needs): the host starts with the broker's
// delivery, says so, and leaves the caller's map as it was.
func TestFloorHoldsDeliveryAtStart(t *testing.T) {
	dir, trustDir := t.TempDir(), filepath.Join(t.TempDir(), "mcpepoch")
	if err := os.Mkdir(trustDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(scope string) *config.Config {
		t.Helper()
		toml := "command = [\"./server\"]\n[credentials.prod]\ntools = [\"deploy\"]\nenv = \"PROD_TOKEN\"\n" + scope
		if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(toml), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	floor := trust.FloorOf(trust.FloorRoot(dir), write("per_call = true\n"))
	if err := trust.SaveFloor(trustDir, floor, "first_use", floor.UpdatedAt); err != nil {
		t.Fatal(err)
	}
	cfg := write("deliver = \"env\"\nas = \"TOKEN\"\n")
	var log bytes.Buffer
	h := New(Options{Dir: dir, TrustDir: trustDir, Credentials: cfg.Credentials, Stderr: &log})
	h.openTrust()
	h.applyFloor()
	h.log.close(20 * time.Second)
	if got := h.opts.Credentials["prod"].Delivery(); got != config.DeliverBroker {
		t.Errorf("delivery in force %q, want broker", got)
	}
	if got := h.envScopesLocked(); len(got) != 0 {
		t.Errorf("env scopes %v, want none", got)
	}
	if cfg.Credentials["prod"].Deliver != config.DeliverEnv {
		t.Error("the caller's credentials were changed")
	}
	if !strings.Contains(log.String(), `credentials.prod.deliver = "env" (in force: "broker")`) {
		t.Errorf("the log does not name the delivery held:\n%s", log.String())
	}
}
