package trust

import (
	"encoding/json"
	"testing"

	"github.com/mcpepoch/mcpepoch/config"
)

// credentials.NAME.deliver is part of the floor: a scope switched from the
// broker to env (per_call dropped with it, as env needs) is held at the
// broker; env switched to the broker raises the floor.
func TestFloorDeliver(t *testing.T) {
	scope := func(c config.Credential) *config.Config {
		c.Tools, c.Env = []string{"deploy"}, "PROD_TOKEN"
		return &config.Config{Credentials: map[string]config.Credential{"prod": c}}
	}
	broker := FloorOf("/p", scope(config.Credential{PerCall: true}))
	eff, _, weak := broker.Reconcile(scope(config.Credential{Deliver: config.DeliverEnv, As: "TOKEN"}), false)
	if p := eff.Credentials["prod"]; len(weak) != 2 || weak[0].Setting != "credentials.prod.deliver" ||
		p.Delivery() != config.DeliverBroker || !p.PerCall {
		t.Errorf("env over a broker floor: weak %v, in force %+v", weak, p)
	}
	env := FloorOf("/p", scope(config.Credential{Deliver: config.DeliverEnv, As: "TOKEN"}))
	eff, next, weak := env.Reconcile(scope(config.Credential{}), false)
	if len(weak) != 0 || eff.Credentials["prod"].Delivery() != config.DeliverBroker || next.Credentials["prod"].Deliver != config.DeliverBroker {
		t.Errorf("broker over an env floor: weak %v, in force %+v, floor %+v", weak, eff.Credentials["prod"], next.Credentials["prod"])
	}
}

// A floor written before deliver was recorded takes the file's delivery,
// whichever it is, and records it: env stays env (not stricter by
// surprise), and a later switch to env is held (not weaker).
func TestFloorDeliverNotRecorded(t *testing.T) {
	var old Floor
	if err := json.Unmarshal([]byte(`{"v": 2, "root": "/p", "proof": null, "exempt": [],
		"credentials": {"prod": {"tools": ["deploy"], "proof": null}}}`), &old); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", config.DeliverEnv} {
		cfg := &config.Config{Credentials: map[string]config.Credential{"prod": {Tools: []string{"deploy"}, Env: "T", Deliver: d, As: "T"}}}
		want := cfg.Credentials["prod"].Delivery()
		eff, next, weak := old.Reconcile(cfg, false)
		if len(weak) != 0 || eff.Credentials["prod"].Delivery() != want || next.Credentials["prod"].Deliver != want || next.Same(old) {
			t.Errorf("file deliver %q over a floor without one: weak %v, in force %q, floor %q", d, weak, eff.Credentials["prod"].Deliver, next.Credentials["prod"].Deliver)
		}
		if d == "" {
			env := &config.Config{Credentials: map[string]config.Credential{"prod": {Tools: []string{"deploy"}, Env: "T", Deliver: config.DeliverEnv, As: "T"}}}
			if _, _, weak := next.Reconcile(env, false); len(weak) != 1 || weak[0].Setting != "credentials.prod.deliver" {
				t.Errorf("env after the broker was recorded: weak %v", weak)
			}
		}
	}
}
