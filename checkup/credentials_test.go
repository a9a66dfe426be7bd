package checkup

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Doctor names each credential scope whose source cannot be read, with a
// fix, and never prints a value: not one it could read, not one in a file
// it refuses.
func TestCredentialSources(t *testing.T) {
	taskOnPath(t)
	const planted = "PLANTED-doctor-5d1e"
	dir := t.TempDir()
	wiredProject(t, dir)
	recordBuild(t, dir)
	outside := t.TempDir()
	good := filepath.Join(outside, "good")
	open := filepath.Join(outside, "open")
	writeFile(t, good, planted)
	writeFile(t, open, planted)
	if err := os.Chmod(good, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCTOR_SET_TOKEN", planted)
	t.Setenv("DOCTOR_UNSET_TOKEN", "")
	os.Unsetenv("DOCTOR_UNSET_TOKEN")
	f, err := os.OpenFile(filepath.Join(dir, "mcpepoch.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`
[credentials.good-file]
file = "` + good + `"
[credentials.open-file]
file = "` + open + `"
[credentials.gone-file]
file = "` + filepath.Join(outside, "gone") + `"
[credentials.set-env]
env = "DOCTOR_SET_TOKEN"
[credentials.unset-env]
env = "DOCTOR_UNSET_TOKEN"
[credentials.no-program]
command = ["mcpepoch-no-such-program", "read", "x"]
[credentials.names-only]
tools = ["x"]
`)
	f.Close()

	r := checkDir(t, dir)
	var got []string
	for _, p := range r.Problems {
		got = append(got, p.String())
	}
	text := strings.Join(got, "\n") + "\n" + strings.Join(r.Notes, "\n")
	if strings.Contains(text, planted) {
		t.Fatalf("doctor printed the secret:\n%s", text)
	}
	for scope, want := range map[string]string{
		"open-file":  "fix: put the secret in a file outside the project",
		"gone-file":  "fix: put the secret in a file outside the project",
		"no-program": "fix: install the program",
	} {
		found := false
		for _, p := range r.Problems {
			if p.Where == "mcpepoch.toml [credentials."+scope+"]" && strings.Contains(p.String(), want) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem for scope %s with %q in:\n%s", scope, want, text)
		}
	}
	if len(r.Problems) != 3 {
		t.Errorf("%d problems, want 3 (good-file, set-env and names-only are fine):\n%s", len(r.Problems), text)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "unset-env") || !strings.Contains(r.Notes[0], "DOCTOR_UNSET_TOKEN") {
		t.Errorf("notes %q, want one naming unset-env and its variable", r.Notes)
	}
}
