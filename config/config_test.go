package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, s string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadMissingIsZero(t *testing.T) {
	c, err := Load(t.TempDir())
	if err != nil || c.Label != "" || c.Path != "" {
		t.Fatalf("Load(empty dir) = %+v, %v", c, err)
	}
}

func TestLoadReadsKeys(t *testing.T) {
	dir := write(t, "label = \"inv\"\ncommand = [\"node\", \"dist/server.js\"]\n[host]\ngrace = \"2s\"\n")
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Label != "inv" || len(c.Command) != 2 || c.Command[1] != "dist/server.js" {
		t.Errorf("got %+v", c)
	}
	if g, _ := c.Grace(); g != 2*time.Second {
		t.Errorf("grace = %v", g)
	}
	if d, _ := c.Drain(); d != DefaultDrain {
		t.Errorf("drain unset = %v, want %v", d, DefaultDrain)
	}
}

func TestLoadErrorsNameFileAndKey(t *testing.T) {
	for _, tc := range []struct{ text, key, msg string }{
		{"lable = \"x\"\n", "lable", "unknown key"},
		{"[host]\ngrace = \"soon\"\n", "host.grace", "invalid duration"},
		{"[host]\nrestart = \"hot\"\n", "host.restart", "not one of"},
		{"[host]\ndrain = \"-1s\"\n", "host.drain", "negative duration"},
		{"[host]\ndrain_start = \"before\"\n", "host.drain_start", `want "after" or "during"`},
		{"[host]\ninit_timeout = \"0s\"\n", "host.init_timeout", "want a positive duration"},
		{"label = \n", "label", FileName + ":1:9: label: expected value but found '\\n' instead"},
		{"label = \"x\"\ncommand = [\"a\" \"b\"]\n", "command", FileName + ":2:16: command: expected a comma"},
		{"[grants\nexempt = []\n", "", FileName + ":1:8: expected '.' or ']' to end table name"},
		{"[grants]\nproof = [\"touch\"]\n", "grants.proof", "not a proof level"},
		{"[grants]\nproof = []\n", "grants.proof", "empty list"},
		{"[grants]\napproval_wait = \"a while\"\n", "grants.approval_wait", "invalid duration"},
		{"[grants]\napproval_wait = \"-1m\"\n", "grants.approval_wait", "negative duration"},
		{"[grants]\nproof = [\"terminal\", \"terminal\"]\n", "grants.proof", "named twice"},
		{"[grants]\nattestation = \"always\"\n", "grants.attestation", `want "required" or "optional"`},
		{"[credentials.pay]\ntools = [\"x\"]\nproof = [\"same user\"]\n", "credentials.pay.proof", "not a proof level"},
	} {
		dir := write(t, tc.text)
		_, err := Load(dir)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("%q: err = %v, want *Error", tc.text, err)
		}
		if ce.Key != tc.key || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), FileName) {
			t.Errorf("%q: err = %v (key %q), want key %q and %q", tc.text, err, ce.Key, tc.key, tc.msg)
		}
	}
}

func TestLoadReadsProof(t *testing.T) {
	dir := write(t, "[grants]\nproof = [\"presence\", \"same-user\"]\n[credentials.pay]\ntools = [\"x\"]\nproof = [\"presence\"]\n")
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Grants.Proof, ",") != "presence,same-user" || strings.Join(c.Credentials["pay"].Proof, ",") != "presence" {
		t.Errorf("proof: grants %v, credentials.pay %v", c.Grants.Proof, c.Credentials["pay"].Proof)
	}
}

func TestApprovalWaitDefaultAndValue(t *testing.T) {
	c, err := Load(write(t, "[grants]\napproval_wait = \"90s\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := c.ApprovalWait(); w != 90*time.Second {
		t.Errorf("approval_wait = %v, want 1m30s", w)
	}
	if w, _ := (&Config{}).ApprovalWait(); w != 50*time.Second {
		t.Errorf("unset approval_wait = %v, want 50s", w)
	}
}
