package grant_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpepoch/mcpepoch/grant"
)

// FuzzOpen: any grants file opens as a store or gives an error, never a
// panic; every grant of a store that opens has an id, an epoch and a tool
// scope.
func FuzzOpen(f *testing.F) {
	const good = `{"id":"g1","agentRun":"r","executionEpoch":"e","toolScope":["a"],"issuedAt":"2025-03-01T10:00:00Z","expiresWhen":"agent-run-ends"}`
	for _, s := range []string{
		`{"v":1,"grants":[` + good + `]}`,
		`{"v":1,"grants":[]}`,
		`{"v":1,"grants":[null]}`,
		`{"v":2}`,
		`{"v":1,"grants":[{"id":"g","executionEpoch":"e","toolScope":[]}]}`,
		`[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "run.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := grant.Open(p)
		if err != nil {
			var ce *grant.CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %T %v, want a *grant.CorruptError", err, err)
			}
			return
		}
		for i, g := range s.Grants {
			if g == nil || g.ID == "" || g.ExecutionEpoch == "" || len(g.ToolScope) == 0 {
				t.Fatalf("grant %d of an opened store: %+v", i, g)
			}
		}
	})
}
