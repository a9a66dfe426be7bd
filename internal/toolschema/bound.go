package toolschema

import (
	"encoding/json"
	"math"
	"strings"
)

// A recursive inputSchema (a $ref that reaches, through its target, the
// schema it is in) can make checking arguments grow exponentially with
// their nesting: each level of a oneOf, anyOf or allOf whose branches
// recurse is checked once per branch, and the check runs under the host's
// lock. The host therefore checks arguments against such a schema only to
// a nesting depth at which the work stays under checkSteps schema
// evaluations, estimated as refs^depth for a schema with refs $ref sites;
// deeper arguments are refused as invalid_arguments, saying why. A schema
// without a reference cycle is checked at any depth.
const checkSteps = 1 << 16

// recursionDepth returns how deeply nested arguments may be to be checked
// against the inputSchema raw, or 0 for no bound: raw has no reference
// cycle among its local references ("#", "#/$defs/NAME",
// "#/definitions/NAME"; others are not loaded, compileSchema).
func recursionDepth(raw json.RawMessage) int {
	var root any
	if json.Unmarshal(raw, &root) != nil {
		return 0
	}
	edges := map[string][]string{}
	sites := 0
	var walk func(v any, in string)
	walk = func(v any, in string) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				sites++
				edges[in] = append(edges[in], ref)
			}
			for k, sub := range x {
				if (k == "$defs" || k == "definitions") && isObject(sub) {
					for name, def := range sub.(map[string]any) {
						walk(def, "#/"+k+"/"+name)
					}
					continue
				}
				walk(sub, in)
			}
		case []any:
			for _, sub := range x {
				walk(sub, in)
			}
		}
	}
	walk(root, "#")
	if !hasCycle(edges) {
		return 0
	}
	depth := int(math.Log(checkSteps) / math.Log(math.Max(2, float64(sites))))
	return max(depth, 2)
}

func isObject(v any) bool { _, ok := v.(map[string]any); return ok }

// hasCycle reports whether the reference graph edges (schema location →
// the $ref values in it) has a cycle. A reference into a location (such
// as "#/$defs/a/properties/b") counts as one to the named definition.
func hasCycle(edges map[string][]string) bool {
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var visit func(n string) bool
	visit = func(n string) bool {
		switch state[n] {
		case visiting:
			return true
		case done:
			return false
		}
		state[n] = visiting
		for _, ref := range edges[n] {
			if visit(refTarget(ref)) {
				return true
			}
		}
		state[n] = done
		return false
	}
	for n := range edges {
		if visit(n) {
			return true
		}
	}
	return false
}

// refTarget is the schema location a local reference names, "" for one
// that is not local.
func refTarget(ref string) string {
	if ref == "#" || strings.HasPrefix(ref, "#/") && !strings.HasPrefix(ref, "#/$defs/") && !strings.HasPrefix(ref, "#/definitions/") {
		return "#"
	}
	for _, p := range []string{"#/$defs/", "#/definitions/"} {
		if rest, ok := strings.CutPrefix(ref, p); ok {
			name, _, _ := strings.Cut(rest, "/")
			return p + name
		}
	}
	return ""
}
