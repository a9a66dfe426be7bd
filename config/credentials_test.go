package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCredentialSourcesAndDelivery(t *testing.T) {
	home, _ := os.UserHomeDir()
	dir := write(t, `[credentials.a]
tools = ["x"]
env = "A_TOKEN"
[credentials.b]
file = "~/.config/inv/token"
[credentials.c]
command = ["pass", "show", "inv"]
deliver = "env"
as = "API_TOKEN"
[credentials.d]
tools = ["y"]
`)
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	a, b, cc, d := c.Credentials["a"], c.Credentials["b"], c.Credentials["c"], c.Credentials["d"]
	if a.Env != "A_TOKEN" || a.Delivery() != DeliverBroker || !a.HasSource() {
		t.Errorf("a = %+v", a)
	}
	if f, err := b.FilePath(); err != nil || f != filepath.Join(home, ".config/inv/token") {
		t.Errorf("b.FilePath() = %q, %v", f, err)
	}
	if len(cc.Command) != 3 || cc.Delivery() != DeliverEnv || cc.As != "API_TOKEN" {
		t.Errorf("c = %+v", cc)
	}
	if d.HasSource() {
		t.Errorf("d has a source: %+v", d)
	}
}

func TestCredentialErrorsNameFileAndKey(t *testing.T) {
	inProject := "" // filled per case: a file inside the project
	for _, tc := range []struct{ text, key, msg string }{
		{"[credentials.p]\nenv = \"A\"\nfile = \"/etc/x\"\n", "credentials.p.file", "alternatives"},
		{"[credentials.p]\nfile = \"/etc/x\"\ncommand = [\"x\"]\n", "credentials.p.command", "alternatives"},
		{"[credentials.p]\nenv = \"1A\"\n", "credentials.p.env", "not a variable name"},
		{"[credentials.p]\nenv = \"MCPEPOCH_CREDENTIALS_TOKEN\"\n", "credentials.p.env", "mcpepoch's own"},
		{"[credentials.p]\nfile = \"token\"\n", "credentials.p.file", "not an absolute path"},
		{"[credentials.p]\nfile = \"@IN@\"\n", "credentials.p.file", "inside the project"},
		{"[credentials.p]\ncommand = []\n", "credentials.p.command", "the program and its arguments"},
		{"[credentials.p]\ncommand = [\"\"]\n", "credentials.p.command", "the program and its arguments"},
		{"[credentials.p]\nenv = \"A\"\ndeliver = \"pipe\"\n", "credentials.p.deliver", "not one of broker, env"},
		{"[credentials.p]\nenv = \"A\"\ndeliver = \"env\"\n", "credentials.p.as", "needs as"},
		{"[credentials.p]\nenv = \"A\"\nas = \"B\"\n", "credentials.p.as", "with deliver = \"broker\""},
		{"[credentials.p]\ndeliver = \"env\"\nas = \"B\"\n", "credentials.p.deliver", "needs a source"},
		{"[credentials.p]\nenv = \"A\"\ndeliver = \"env\"\nas = \"B\"\nper_call = true\n", "credentials.p.deliver", "per_call"},
		{"[credentials.p]\nenv = \"A\"\ndeliver = \"env\"\nas = \"B-C\"\n", "credentials.p.as", "not a variable name"},
		{"[credentials.p]\nenv = [\"A\"]\n", "credentials.p.env", "want a string"},
		{"[credentials.p]\ncommand = \"pass show x\"\n", "credentials.p.command", "want a list of strings"},
		{"[credentials.p]\nsource = \"x\"\n", "credentials.p.source", "credentials.NAME.command"},
	} {
		dir := t.TempDir()
		inProject = filepath.Join(dir, "secrets", "token")
		text := strings.ReplaceAll(tc.text, "@IN@", inProject)
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("%q: err = %v, want *Error", text, err)
		}
		if ce.Key != tc.key || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), FileName) {
			t.Errorf("%q: err = %v (key %q), want key %q and %q", text, err, ce.Key, tc.key, tc.msg)
		}
	}
}
