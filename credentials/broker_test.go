package credentials_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/credbroker"
	"github.com/mcpepoch/mcpepoch/credentials"
	"github.com/mcpepoch/mcpepoch/credwire"
	"github.com/mcpepoch/mcpepoch/notify"
)

// The client speaks the host's own broker: a secret for the call's token
// and scope, the broker's code for everything else, its own refusals (a
// request it cannot parse never reaches here) included.
func TestGetFromHostBroker(t *testing.T) {
	dir, err := os.MkdirTemp("", "credb")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b, err := credbroker.Listen(filepath.Join(dir, "e.cred"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := credbroker.NewToken()
	go b.Serve(ctx, func(ctx context.Context, peer notify.Peer, req credwire.Request) credwire.Answer {
		switch {
		case !credbroker.TokenEqual(req.Call, call):
			return credbroker.Refusal(credwire.CodeNotInCall, "no such call in flight")
		case req.Scope != "api":
			return credbroker.Refusal(credwire.CodeUnknownScope, "no such scope")
		}
		return credbroker.Issue("broker-secret-1")
	}, nil)
	for _, kv := range b.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	meta := map[string]any{credwire.MetaKey: call}
	if got, err := credentials.Get(ctx, "api", meta); err != nil || got != "broker-secret-1" {
		t.Fatalf("Get(api) = %q, %v", got, err)
	}
	var e *credentials.Error
	if _, err := credentials.Get(ctx, "other", meta); !errors.As(err, &e) || e.Code != credwire.CodeUnknownScope {
		t.Fatalf("Get(other): %v, want code %s", err, credwire.CodeUnknownScope)
	}
	if _, err := credentials.Get(ctx, "api", map[string]any{credwire.MetaKey: credbroker.NewToken()}); !errors.As(err, &e) || e.Code != credwire.CodeNotInCall {
		t.Fatalf("Get with another call's token: %v, want code %s", err, credwire.CodeNotInCall)
	}
	if credentials.EnvSocket != credwire.EnvSocket || credentials.MetaKey != credwire.MetaKey || credentials.Version != credwire.Version {
		t.Error("the client's variable name, _meta key or version differ from the broker's")
	}
}
