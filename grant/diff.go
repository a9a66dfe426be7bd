package grant

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// Change is one difference between two catalogs, for the review screen.
type Change struct {
	Tool   string `json:"tool"`
	Kind   string `json:"kind"` // see DiffCatalogs
	Detail string `json:"detail"`
}

func (c Change) String() string { return fmt.Sprintf("%s: %s: %s", c.Tool, c.Kind, c.Detail) }

// toolDef is what the review compares of a tool definition (MCP tools spec).
type toolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema schema          `json:"inputSchema"`
	Annotations json.RawMessage `json:"annotations"`
}

type schema struct {
	Properties map[string]property `json:"properties"`
	Required   []string            `json:"required"`
}

type property struct {
	Type    json.RawMessage   `json:"type"`
	Default json.RawMessage   `json:"default"`
	Enum    []json.RawMessage `json:"enum"`
}

// DiffCatalogs compares two tools/list arrays and returns what a reviewer
// must see, sorted by tool: kinds tool_added, tool_removed,
// description_changed, field_added, field_removed, required_added,
// required_removed, type_changed, default_changed (the seed's
// target: preview → production), enum_changed, annotations_changed.
// Annotations are shown, never used to decide anything.
func DiffCatalogs(old, next []json.RawMessage) []Change {
	o, n := index(old), index(next)
	var out []Change
	for name, nt := range n {
		ot, ok := o[name]
		if !ok {
			out = append(out, Change{name, "tool_added", "new tool"})
			continue
		}
		out = append(out, diffTool(name, ot, nt)...)
	}
	for name := range o {
		if _, ok := n[name]; !ok {
			out = append(out, Change{name, "tool_removed", "tool no longer offered"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Tool != out[j].Tool {
			return out[i].Tool < out[j].Tool
		}
		return out[i].Kind+out[i].Detail < out[j].Kind+out[j].Detail
	})
	return out
}

func index(tools []json.RawMessage) map[string]toolDef {
	m := map[string]toolDef{}
	for _, raw := range tools {
		var t toolDef
		if json.Unmarshal(raw, &t) == nil && t.Name != "" {
			m[t.Name] = t
		}
	}
	return m
}

func diffTool(name string, o, n toolDef) []Change {
	var out []Change
	if o.Description != n.Description {
		out = append(out, Change{name, "description_changed", fmt.Sprintf("%q → %q", o.Description, n.Description)})
	}
	for f, np := range n.InputSchema.Properties {
		op, ok := o.InputSchema.Properties[f]
		if !ok {
			out = append(out, Change{name, "field_added", f})
			continue
		}
		if !jsonEqual(op.Type, np.Type) {
			out = append(out, Change{name, "type_changed", fmt.Sprintf("%s: %s → %s", f, show(op.Type), show(np.Type))})
		}
		if !jsonEqual(op.Default, np.Default) {
			out = append(out, Change{name, "default_changed", fmt.Sprintf("%s: %s → %s", f, show(op.Default), show(np.Default))})
		}
		if !enumEqual(op.Enum, np.Enum) {
			out = append(out, Change{name, "enum_changed", fmt.Sprintf("%s: %s → %s", f, showEnum(op.Enum), showEnum(np.Enum))})
		}
	}
	for f := range o.InputSchema.Properties {
		if _, ok := n.InputSchema.Properties[f]; !ok {
			out = append(out, Change{name, "field_removed", f})
		}
	}
	for _, r := range n.InputSchema.Required {
		if !slices.Contains(o.InputSchema.Required, r) {
			out = append(out, Change{name, "required_added", r})
		}
	}
	for _, r := range o.InputSchema.Required {
		if !slices.Contains(n.InputSchema.Required, r) {
			out = append(out, Change{name, "required_removed", r})
		}
	}
	if !jsonEqual(o.Annotations, n.Annotations) {
		out = append(out, Change{name, "annotations_changed", fmt.Sprintf("%s → %s", show(o.Annotations), show(n.Annotations))})
	}
	return out
}

// jsonEqual compares two JSON values by meaning (object key order ignored).
func jsonEqual(a, b json.RawMessage) bool {
	a, b = bytes.TrimSpace(a), bytes.TrimSpace(b)
	if bytes.Equal(a, []byte("null")) {
		a = nil // null and absent say the same: no value
	}
	if bytes.Equal(b, []byte("null")) {
		b = nil
	}
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func enumEqual(a, b []json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !jsonEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

func show(v json.RawMessage) string {
	if len(v) == 0 {
		return "(none)"
	}
	var x any
	if json.Unmarshal(v, &x) != nil {
		return string(v)
	}
	b, _ := json.Marshal(x)
	return string(b)
}

func showEnum(e []json.RawMessage) string {
	if e == nil {
		return "(none)"
	}
	b, _ := json.Marshal(e)
	return string(b)
}
