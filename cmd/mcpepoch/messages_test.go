package main

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/mcpepoch/mcpepoch/localapi"
)

// TestEnrollPrivateKeyNamesThePublicOne: enroll --ssh given the private
// key says to pass KEY.pub, not a parser's error.
func TestEnrollPrivateKeyNamesThePublicOne(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "k")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "id_ed25519_sk")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "enroll", "--ssh", key)
	if code != exitUsage || !strings.Contains(stderr, "this is a private key: pass the public key "+key+".pub") {
		t.Fatalf("enroll --ssh PRIVATE: exit %d\n%s", code, stderr)
	}
}

// TestApprovePromptWithoutScope: a grant with no credential scope is
// asked for in words, not with a dash.
func TestApprovePromptWithoutScope(t *testing.T) {
	rv := localapi.Review{AgentRun: "01JQ7R2B7Y9V3K5M8N0P4Q6R1S", Epoch: "01JQ7R9KQ6K2Y8W4JH0M5N7P3R"}
	rv.Credentials = map[string][]string{"add_note": {}}
	req := localapi.ApproveRequest{Tools: []string{"add_note"}, Expires: "agent-run-ends"}
	var w strings.Builder
	if _, err := askApproval(newKeyReader(context.Background(), bufio.NewReader(strings.NewReader("n\n")), nil), &w, rv, &req); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.String(), "approve tools add_note with no credential scope for agent run") {
		t.Errorf("prompt %q", w.String())
	}
}

// TestInitNamesWhatTheBuildRuns: init's plan names the commands of the
// Taskfile's own build task, not the command it would write into a new one.
func TestInitNamesWhatTheBuildRuns(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"package.json": `{"name": "tsproj", "main": "dist/server.js", "scripts": {"build": "tsc"}}`,
		"Taskfile.yml": "version: '3'\ntasks:\n  build:\n    cmds:\n      - npx tsc\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, stderr, code := runCLI(t, "init", "--dir", dir, "--dry-run", "--mcpepoch", "/opt/mcpepoch")
	if code != 0 || !strings.Contains(stderr, "build: task build (npx tsc)\n") {
		t.Fatalf("init --dry-run: exit %d\n%s", code, stderr)
	}
}

// TestApproveRepromptKeepsTheDefault: after a tool name not in the
// catalog, Enter at the question asked again takes the default it shows,
// as at the first asking, and goes on to the yes/no question.
func TestApproveRepromptKeepsTheDefault(t *testing.T) {
	rv := localapi.Review{AgentRun: "01JQ7R2B7Y9V3K5M8N0P4Q6R1S", Epoch: "01JQ7R9KQ6K2Y8W4JH0M5N7P3R",
		Tools:   []json.RawMessage{json.RawMessage(`{"name":"shout"}`), json.RawMessage(`{"name":"add"}`)},
		Pending: []*localapi.Pending{{Tool: "add", Epoch: "01JQ7R9KQ6K2Y8W4JH0M5N7P3R"}}}
	for _, second := range []string{"\n", "y\n"} {
		req := localapi.ApproveRequest{Expires: "agent-run-ends"}
		var w strings.Builder
		keys := newKeyReader(context.Background(), bufio.NewReader(strings.NewReader("shuot\n"+second+"y\n")), nil)
		ok, err := askApproval(keys, &w, rv, &req)
		if err != nil || !ok || !slices.Equal(req.Tools, []string{"add"}) {
			t.Errorf("answer %q at the second asking: approved %v, tools %q, err %v, want add approved:\n%s", second, ok, req.Tools, err, w.String())
		}
		if !strings.Contains(w.String(), "not in the current catalog: shuot") || !strings.Contains(w.String(), "approve tools add with") {
			t.Errorf("answer %q at the second asking: screen\n%s", second, w.String())
		}
	}
}
