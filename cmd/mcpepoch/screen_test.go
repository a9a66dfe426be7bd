package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/internal/cli"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// TestReviewScreenShortDigestsAndColour: the approve screen shows digests
// cut to 12 hex digits and colours what changed since the last approval
// (CHANGED, NEW, new tools, changed defaults) on a terminal; --full keeps
// the whole digests, and without colour no escape sequence is written.
func TestReviewScreenShortDigestsAndColour(t *testing.T) {
	a, b, c := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("c", 64)
	rv := localapi.Review{
		AgentRun: "01J9Z6W0C2H6F0S8A1B3E5G7K9", Label: "inv", State: localapi.StateReady, Epoch: epoch.New(time.Now()), PID: 7,
		ApprovedEpoch: epoch.New(time.Now().Add(-time.Minute)),
		Identity: []localapi.IdentityLine{
			{Role: build.RoleEntry, Path: "dist/server.js", Digest: build.Digest(a), Approved: build.Digest(b), Changed: true},
			{Role: build.RoleLockfile, Path: "package-lock.json", Digest: build.Digest(c)},
			{Role: build.RoleConfig, Path: ".venv/bin/python._pth", Missing: true},
		},
		CatalogRevision: localapi.Revision(c),
		Coverage: grant.Coverage{CatalogChanges: []grant.Change{
			{Tool: "ping", Kind: "tool_added", Detail: "new tool"},
			{Tool: "adjust", Kind: "default_changed", Detail: "delta: 1 → 100"},
			{Tool: "lookup", Kind: "description_changed", Detail: `"a" → "b"`},
		}},
		Grants: []*grant.Grant{},
	}
	var out bytes.Buffer
	t.Setenv("NO_COLOR", "")
	t.Setenv("CLICOLOR_FORCE", "1")
	printReview(&out, rv, screen{p: painter{cli.NewPainter(&out)}})
	s := out.String()
	for _, want := range []string{
		"dist/server.js               sha256:aaaaaaaaaaaa  \x1b[33mCHANGED\x1b[0m (was sha256:bbbbbbbbbbbb)\n",
		"sha256:cccccccccccc  \x1b[32munchanged\x1b[0m\n",
		".venv/bin/python._pth        (absent)  \x1b[32munchanged\x1b[0m\n",
		"catalog sha256:cccccccccccc (0 tools)\n",
		"    \x1b[33mping: tool_added: new tool\x1b[0m\n",
		"    \x1b[33madjust: default_changed: delta: 1 → 100\x1b[0m\n",
		"    lookup: description_changed: \"a\" → \"b\"\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("review screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, strings.Repeat("a", 13)) {
		t.Errorf("review screen shows a whole digest:\n%s", s)
	}

	out.Reset()
	printReview(&out, rv, screen{full: true})
	s = out.String()
	if !strings.Contains(s, a+"  CHANGED (was "+b+")\n") || !strings.Contains(s, "catalog "+c+" (0 tools)") {
		t.Errorf("--full review screen does not show whole digests:\n%s", s)
	}
	if strings.Contains(s, "\x1b") {
		t.Errorf("review screen without colour holds an escape:\n%q", s)
	}
}

// TestStatusShortDigests: status shows digests cut to 12 hex digits;
// --full and --json keep them whole.
func TestStatusShortDigests(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	entry, cat := "sha256:"+strings.Repeat("e", 64), "sha256:"+strings.Repeat("f", 64)
	var run string
	run = fakeHost(t, root, func(ctx context.Context, peer notify.Peer, req notify.Request) notify.Response {
		s := localapi.Status{AgentRun: epoch.RunID(run), Label: "lbl", State: localapi.StateReady,
			Execution: &localapi.ExecutionRecord{LaunchCommand: []string{"node", "dist/server.js"}, WorkingDirectory: root,
				EntryDigest: build.Digest(entry), Runtime: "node", RuntimeDigest: build.Digest(entry), Epoch: epoch.New(time.Now()), ProcessID: 7},
			Catalog: localapi.Revision(cat), Tools: []string{"a"}}
		return notify.Response{Type: localapi.TypeStatus, Payload: payload(t, s)}
	})
	stdout, _, code := runCLI(t, "status", "--dir", root)
	if code != 0 || !strings.Contains(stdout, "  entry:    sha256:eeeeeeeeeeee\n") || !strings.Contains(stdout, "  catalog:  sha256:ffffffffffff (1 tool)\n") ||
		strings.Contains(stdout, strings.Repeat("e", 13)) {
		t.Errorf("status: exit %d, want short digests:\n%s", code, stdout)
	}
	for _, args := range [][]string{{"--full"}, {"--json"}} {
		stdout, _, code = runCLI(t, append([]string{"status", "--dir", root}, args...)...)
		if code != 0 || !strings.Contains(stdout, entry) || !strings.Contains(stdout, cat) {
			t.Errorf("status %s: exit %d, want whole digests:\n%s", args[0], code, stdout)
		}
	}
}
