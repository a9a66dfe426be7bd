package host_test

import (
	"strings"
	"testing"
)

// recursiveSchema is recursive through a oneOf whose two branches both
// recurse: checking {"x":{"x":…}} n deep costs 2^n evaluations.
const recursiveSchema = `{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}},` +
	`"$defs":{"n":{"oneOf":[{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}}},` +
	`{"type":"object","properties":{"x":{"$ref":"#/$defs/n"}},"required":["never"]}]}}}`

// nested returns {"x":{"x":…{}}} with depth objects.
func nested(depth int) map[string]any {
	m := map[string]any{}
	for range depth - 1 {
		m = map[string]any{"x": m}
	}
	return m
}

// TestRecursiveSchemaCheckIsBounded: arguments nested deeper than a
// recursive inputSchema can be checked in bounded work are refused at
// once as invalid_arguments, saying why, instead of stalling the host
// (2^40 evaluations here); shallower ones are checked and forwarded.
func TestRecursiveSchemaCheckIsBounded(t *testing.T) {
	t.Parallel()
	p := newProject(t, map[string]string{"FIXTURE_EXTRA_TOOLS": "deep", "FIXTURE_EXTRA_SCHEMA": recursiveSchema})
	s := gConnect(t, p)
	s.list()
	if got := s.text("deep", nested(4)); !strings.HasPrefix(got, "deep args=") {
		t.Fatalf("a call 4 deep: %q", got)
	}
	data := s.refusal("deep", nested(40))
	if d, _ := data["detail"].(string); !strings.Contains(d, "nested 40 levels deep") {
		t.Errorf("detail %q does not say why", d)
	}
	if got := s.text("deep", nested(4)); !strings.HasPrefix(got, "deep args=") {
		t.Fatalf("a call 4 deep after the refusal: %q", got)
	}
}
