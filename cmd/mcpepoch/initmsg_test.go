package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/wire"
)

// init's next steps name npx mcpepoch when the hook is the project's npm
// install (no mcpepoch on PATH), and mcpepoch otherwise; counts agree.
func TestInitNextStepsName(t *testing.T) {
	for hook, want := range map[string]string{
		"node_modules/.bin/mcpepoch": "  npx mcpepoch doctor ",
		"/home/u/go/bin/mcpepoch":    "  mcpepoch doctor ",
	} {
		var b bytes.Buffer
		nextSteps(&b, &wire.Wiring{}, selfName(hook))
		if !strings.Contains(b.String(), want) || (want == "  mcpepoch doctor " && strings.Contains(b.String(), "npx")) {
			t.Errorf("hook %s: next steps\n%s\nwant %q", hook, b.String(), want)
		}
	}
	if files(1) != "1 file" || files(7) != "7 files" {
		t.Errorf("files(1) = %q, files(7) = %q", files(1), files(7))
	}
}
