package host

import (
	"encoding/json"
	"testing"
)

// A new catalog (a restart, a re-list) keeps the compiled schema of every
// definition that did not change and compiles only the changed ones.
func TestCompileToolsReusesUnchangedSchemas(t *testing.T) {
	a := json.RawMessage(`{"name":"a","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}}}}`)
	b1 := json.RawMessage(`{"name":"b","inputSchema":{"type":"object"}}`)
	b2 := json.RawMessage(`{"name":"b","inputSchema":{"type":"object","required":["x"]}}`)
	cat1, err := newCatalog([]json.RawMessage{a, b1})
	if err != nil {
		t.Fatal(err)
	}
	first := compileTools(cat1, nil)
	// The same definition of a, spelled otherwise (spacing, member order).
	a2 := json.RawMessage(`{ "inputSchema": {"properties":{"n":{"type":"integer"}},"type":"object"}, "name": "a" }`)
	cat2, err := newCatalog([]json.RawMessage{a2, b2})
	if err != nil {
		t.Fatal(err)
	}
	second := compileTools(cat2, first)
	if second["a"].schema == nil || second["a"].schema != first["a"].schema {
		t.Errorf("unchanged tool a was compiled again")
	}
	if string(second["a"].def) != string(a2) {
		t.Errorf("tool a keeps the old definition's bytes %s, want the new ones", second["a"].def)
	}
	if second["b"].schema == first["b"].schema {
		t.Errorf("changed tool b kept its old compiled schema")
	}
	if problem := second["b"].schema.Check(json.RawMessage(`{}`)); problem == "" {
		t.Errorf("tool b's new schema (x required) accepts {}")
	}
}
