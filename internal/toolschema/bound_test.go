package toolschema

import "testing"

// TestRecursionDepth: only a schema with a reference cycle is bounded,
// and more $ref sites bound it lower.
func TestRecursionDepth(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   int
	}{
		{`{"type":"object"}`, 0},
		// Shared definitions, no cycle: no bound however many refs.
		{`{"properties":{"a":{"$ref":"#/$defs/s"},"b":{"$ref":"#/$defs/s"},"c":{"$ref":"#/$defs/t"}},"$defs":{"s":{"type":"string"},"t":{"$ref":"#/$defs/s"}}}`, 0},
		// The root refers to itself: 1 site counts as 2.
		{`{"properties":{"child":{"$ref":"#"}}}`, 16},
		// Three sites in a cycle through $defs (and draft-07's definitions).
		{`{"properties":{"x":{"$ref":"#/$defs/n"}},"$defs":{"n":{"oneOf":[{"properties":{"x":{"$ref":"#/$defs/n"}}},{"properties":{"x":{"$ref":"#/$defs/n/oneOf/0"}}}]}}}`, 10},
		{`{"properties":{"x":{"$ref":"#/definitions/n"}},"definitions":{"n":{"properties":{"x":{"$ref":"#/definitions/n"}}}}}`, 16},
	} {
		if got := recursionDepth([]byte(tc.schema)); got != tc.want {
			t.Errorf("recursionDepth(%s) = %d, want %d", tc.schema, got, tc.want)
		}
	}
}
