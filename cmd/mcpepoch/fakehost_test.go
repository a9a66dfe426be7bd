package main

// The CLI against hosts that say hostile things: a stand-in host on a real
// socket (notify.Listen) answers with what a server chose (tool names,
// annotations) or a grants file holds, and the tests check what reaches the
// terminal and what the CLI sends back.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/grant"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
)

// hostile is a tool name that, printed raw, returns the cursor and erases
// the line, so that a terminal shows only "read_file".
const hostile = "wipe_disk\r\x1b[Kread_file"

// rawControls are characters that must never reach the terminal raw.
var rawControls = []string{"\x1b", "\r", "\u009b", "\x7f", "\u202e", "\x07"}

func assertNoControls(t *testing.T, what, s string) {
	t.Helper()
	for _, c := range rawControls {
		if strings.Contains(s, c) {
			t.Errorf("%s holds a raw %q:\n%q", what, c, s)
		}
	}
}

// shortRoot returns a project root short enough for the default socket
// directory.
func shortRoot(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "fh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	root, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// fakeHost serves h on a real host socket of the project at root until the
// test ends, and returns its run id.
func fakeHost(t *testing.T, root string, h notify.Handler) string {
	t.Helper()
	run := ulid.Make().String()
	l, err := notify.Listen(root, run)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Serve(ctx, h); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return run
}

// runCLI runs the command line in this process and returns its stdout,
// stderr and exit status.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Run(ctx, args, Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	code = report(&errb, err)
	t.Logf("mcpepoch %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errb.String())
	return out.String(), errb.String(), code
}

func payload(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// hostileReview is a review whose server named its tools to deceive, and
// whose publish tool uses a credential scope that needs a per-call approval.
func hostileReview(t *testing.T, run string) localapi.Review {
	ep := epoch.New(time.Now())
	return localapi.Review{
		AgentRun: epoch.RunID(run), Label: "inv\x1b]0;pwned\x07", State: localapi.StateReady, Epoch: ep, PID: 42,
		Identity:        []localapi.IdentityLine{{Role: build.RoleEntry, Path: "dist/\u202eelif.js", Digest: build.Digest("sha256:" + strings.Repeat("a", 64))}},
		CatalogRevision: localapi.Revision("sha256:" + strings.Repeat("c", 64)),
		Tools: []json.RawMessage{
			payload(t, map[string]any{"name": hostile, "description": "reads\r\x1b[2J"}),
			json.RawMessage("{\"name\":\"publish_preview\",\"annotations\":{\"title\":\"safe \u202e\u009b2J\x7f\"}}"),
		},
		Coverage: grant.Coverage{
			Credentials: map[string][]string{hostile: {}, "publish_preview": {"payments"}},
			PerCall:     []string{"payments"},
		},
		Pending: []*localapi.Pending{{Tool: hostile, Reason: grant.AuthorizationRequired, Epoch: ep, At: time.Now(), Count: 1}},
		Grants:  []*grant.Grant{},
	}
}

// TestApproveAll: the review screen and the approved line escape what the
// server chose, the approval names the reviewed catalog revision, and --all
// says that per-call tools still need their own approvals.
func TestApproveAll(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	var (
		mu  sync.Mutex
		got []localapi.ApproveRequest
		rv  localapi.Review
	)
	run := ""
	run = fakeHost(t, root, func(ctx context.Context, peer notify.Peer, req notify.Request) notify.Response {
		mu.Lock()
		defer mu.Unlock()
		switch req.Type {
		case localapi.TypeReview:
			return notify.Response{Type: localapi.TypeReview, Payload: payload(t, rv)}
		case localapi.TypeApprove:
			var ar localapi.ApproveRequest
			if err := json.Unmarshal(req.Payload, &ar); err != nil {
				return notify.ErrorResponse(notify.CodeBadRequest, err.Error())
			}
			got = append(got, ar)
			g := grant.Grant{ID: epoch.NewGrantID(time.Now()), AgentRun: rv.AgentRun, ExecutionEpoch: ar.Epoch,
				ToolScope: []string{hostile, "publish_preview"}, CredentialScope: []string{"payments"},
				ExpiresWhen: ar.Expires, ApprovedBy: "alice"}
			return notify.Response{Type: localapi.TypeApprove, Payload: payload(t, g)}
		}
		return notify.ErrorResponse(notify.CodeUnknownType, req.Type)
	})
	mu.Lock()
	rv = hostileReview(t, run)
	mu.Unlock()

	stdout, stderr, code := runCLI(t, "approve", "--dir", root, "--yes", "--all")
	if code != 0 {
		t.Fatalf("approve --all: exit %d", code)
	}
	assertNoControls(t, "review screen", stdout)
	assertNoControls(t, "approve stderr", stderr)
	for _, want := range []string{`wipe_disk\r\x1b[Kread_file`, `inv\x1b]0;pwned\a`, `dist/\u202eelif.js`, `safe \u202e\u009b2J\x7f`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("review screen lacks %s", want)
		}
	}
	if !strings.Contains(stdout, `approved: grant `) || !strings.Contains(stdout, `tools wipe_disk\r\x1b[Kread_file, publish_preview`) {
		t.Errorf("approved line does not show the escaped tools:\n%s", stdout)
	}
	if stderr != "" {
		t.Errorf("approve --yes wrote on stderr, want everything on stdout:\n%s", stderr)
	}
	mu.Lock()
	if len(got) != 1 || got[0].Catalog != rv.CatalogRevision || got[0].Epoch != rv.Epoch || !got[0].All {
		t.Errorf("approve requests %+v, want one for catalog %s, epoch %s, all", got, rv.CatalogRevision, rv.Epoch)
	}
	mu.Unlock()
	if !strings.Contains(stdout, "note: this grant does not cover calls of publish_preview: credential scope payments needs an approval for each call (mcpepoch approve --run "+run+" --tools TOOL --expires per-call)\n") {
		t.Errorf("no per-call note after --all:\n%s", stdout)
	}

	// Approving per call needs no note.
	stdout, _, code = runCLI(t, "approve", "--dir", root, "--yes", "--all", "--expires", "per-call")
	if code != 0 || strings.Contains(stdout, "note:") {
		t.Errorf("approve --all --expires per-call: exit %d, stdout:\n%s", code, stdout)
	}
}

// TestStatusHostile: status escapes what hosts report, and exits 4 when a
// host answered with an error, after listing the others.
func TestStatusHostile(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	var good string
	good = fakeHost(t, root, func(ctx context.Context, peer notify.Peer, req notify.Request) notify.Response {
		s := localapi.Status{AgentRun: epoch.RunID(good), Label: "lbl\x1b[31m", State: localapi.StateReady, Reason: "",
			Execution: &localapi.ExecutionRecord{LaunchCommand: []string{"node", "dist/\u202eserver.js"}, WorkingDirectory: root,
				EntryDigest: build.Digest("sha256:" + strings.Repeat("a", 64)), Runtime: "node\r", Epoch: epoch.New(time.Now()), ProcessID: 7},
			Catalog: localapi.Revision("sha256:" + strings.Repeat("b", 64)), Tools: []string{hostile},
			Drift: []string{"running ≠ built: " + hostile}}
		return notify.Response{Type: localapi.TypeStatus, Payload: payload(t, s)}
	})
	bad := fakeHost(t, root, func(ctx context.Context, peer notify.Peer, req notify.Request) notify.Response {
		return notify.ErrorResponse(notify.CodeInternal, "boom\x1b[2J")
	})

	stdout, stderr, code := runCLI(t, "status", "--dir", root)
	if code != exitHostError {
		t.Errorf("status with a failing host: exit %d, want %d", code, exitHostError)
	}
	assertNoControls(t, "status stdout", stdout)
	assertNoControls(t, "status stderr", stderr)
	for _, want := range []string{"host " + good + ` (lbl\x1b[31m)`, `running ≠ built: wipe_disk\r\x1b[Kread_file`, `dist/\u202eserver.js`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status stdout lacks %s", want)
		}
	}
	if !strings.Contains(stderr, "host "+bad+`: error: host error internal: boom\x1b[2J`) {
		t.Errorf("status stderr does not report host %s", bad)
	}

	_, _, code = runCLI(t, "status", "--dir", root, "--json")
	if code != exitHostError {
		t.Errorf("status --json with a failing host: exit %d, want %d", code, exitHostError)
	}
}

// TestStatusSocketDirError: a socket directory that fails its check is
// named as such, and status exits 4.
func TestStatusSocketDirError(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	dir := filepath.Join(root, ".mcpepoch", "sock")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o750)
	_, stderr, code := runCLI(t, "status", "--dir", root)
	if code != exitHostError {
		t.Errorf("exit %d, want %d", code, exitHostError)
	}
	if !strings.Contains(stderr, "socket directory "+dir+": error: ") || !strings.Contains(stderr, "group or world accessible") {
		t.Errorf("stderr does not name the socket directory error:\n%s", stderr)
	}
	if strings.Contains(stderr, "host .") {
		t.Errorf("stderr calls the directory a host:\n%s", stderr)
	}
}

// TestGrantsCorruptAndHostile: a corrupt grants file is named and skipped,
// the others are listed with what they hold escaped, and the exit status
// is 2.
func TestGrantsCorruptAndHostile(t *testing.T) {
	t.Parallel()
	root := shortRoot(t)
	dir := filepath.Join(root, ".mcpepoch", "grants")
	os.MkdirAll(dir, 0o700)
	nullFile := filepath.Join(dir, "01AAAAAAAAAAAAAAAAAAAAAAAA.json")
	os.WriteFile(nullFile, []byte(`{"v":1,"grants":[null]}`), 0o600)
	s, err := grant.Open(filepath.Join(dir, "01BBBBBBBBBBBBBBBBBBBBBBBB.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.Add(&grant.Grant{ID: "01GRANT", AgentRun: "01BBBBBBBBBBBBBBBBBBBBBBBB", ExecutionEpoch: "01EPOCH\u202e",
		ToolScope: []string{hostile}, CredentialScope: []string{"pay\x1b[8m"}, IssuedAt: time.Now(),
		ExpiresWhen: grant.ExpiresRunEnds, ApprovedBy: "eve\r"})
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := runCLI(t, "grants", "--dir", root)
	if code != exitUsage {
		t.Errorf("exit %d, want %d", code, exitUsage)
	}
	if n := strings.Count(stderr, "\n"); n != 1 || !strings.Contains(stderr, nullFile) || !strings.Contains(stderr, "grants[0]") {
		t.Errorf("want one line naming %s and its entry, got:\n%s", nullFile, stderr)
	}
	assertNoControls(t, "grants stdout", stdout)
	for _, want := range []string{"01GRANT", `  wipe_disk\r\x1b[Kread_file  `, `  pay\x1b[8m  `, `  01EPOCH\u202e  `, `  eve\r` + "\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("grants stdout lacks %s", want)
		}
	}
	// Columns are aligned: each value starts under its heading.
	if lines := strings.Split(stdout, "\n"); len(lines) < 2 ||
		strings.Index(lines[0], "EPOCH") != strings.Index(lines[1], `01EPOCH\u202e`) ||
		strings.Index(lines[0], "BY") != strings.Index(lines[1], `eve\r`) {
		t.Errorf("grants columns not aligned under their headings:\n%s", stdout)
	}

	stdout, _, code = runCLI(t, "grants", "--dir", root, "--json")
	var all []grant.Grant
	if code != exitUsage || json.Unmarshal([]byte(stdout), &all) != nil || len(all) != 1 {
		t.Errorf("grants --json: exit %d, %d grants, want 2 and 1", code, len(all))
	}
}
