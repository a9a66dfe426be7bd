package grant_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/grant"
)

// TestOpenMalformedEntry: an entry that is not a grant makes the file
// corrupt, named with the entry's index, instead of a nil grant for the
// caller to trip on.
func TestOpenMalformedEntry(t *testing.T) {
	const good = `{"id":"g1","agentRun":"r","executionEpoch":"e","toolScope":["a"],"issuedAt":"2025-03-01T10:00:00Z","expiresWhen":"agent-run-ends"}`
	for name, tc := range map[string]struct{ content, want string }{
		"null":          {`{"v":1,"grants":[null]}`, "grants[0]: null"},
		"null second":   {`{"v":1,"grants":[` + good + `,null]}`, "grants[1]: null"},
		"no id":         {`{"v":1,"grants":[{"executionEpoch":"e","toolScope":["a"]}]}`, `grants[0]: member "id"`},
		"no epoch":      {`{"v":1,"grants":[{"id":"g","toolScope":["a"]}]}`, `grants[0]: member "executionEpoch"`},
		"no tool scope": {`{"v":1,"grants":[{"id":"g","executionEpoch":"e"}]}`, `grants[0]: member "toolScope"`},
		"empty scope":   {`{"v":1,"grants":[{"id":"g","executionEpoch":"e","toolScope":[]}]}`, `grants[0]: member "toolScope"`},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run1.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := grant.Open(path)
			var ce *grant.CorruptError
			if !errors.As(err, &ce) || ce.Path != path {
				t.Fatalf("Open = %v, %v; want a *grant.CorruptError for %s", s, err, path)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q of %s", err, tc.want, path)
			}
		})
	}
}

// TestReadAllSkipsCorrupt: ReadAll returns the stores it could read and an
// error naming each corrupt file.
func TestReadAllSkipsCorrupt(t *testing.T) {
	dir := t.TempDir()
	okPath := filepath.Join(dir, "b.json")
	s, _ := grant.Open(okPath)
	s.Add(newGrant("g1", epochA, []string{"slow_write"}, nil))
	if err := s.Save(); err != nil {
		t.Fatal(err)
	}
	bad1, bad2 := filepath.Join(dir, "a.json"), filepath.Join(dir, "c.json")
	os.WriteFile(bad1, []byte(`{"v":1,"grants":[null]}`), 0o600)
	os.WriteFile(bad2, []byte(`{`), 0o600)

	all, err := grant.ReadAll(dir)
	if len(all) != 1 || all[okPath] == nil || len(all[okPath].Grants) != 1 {
		t.Errorf("ReadAll stores %v, want only %s", all, okPath)
	}
	var ce *grant.CorruptError
	if !errors.As(err, &ce) || ce.Path != bad1 {
		t.Fatalf("ReadAll error %v, want a *grant.CorruptError for %s first", err, bad1)
	}
	if !strings.Contains(err.Error(), bad1) || !strings.Contains(err.Error(), bad2) {
		t.Errorf("ReadAll error %q does not name both corrupt files", err)
	}
}
