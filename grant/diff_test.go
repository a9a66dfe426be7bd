package grant_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/grant"
)

func tools(defs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(defs))
	for i, d := range defs {
		out[i] = json.RawMessage(d)
	}
	return out
}

// publishPreview is the seed's tool, with its target default and extra
// schema text.
func publishPreview(target, extraProps, required string) string {
	return fmt.Sprintf(`{"name":"publish_preview","description":"Pretend to publish branch to target.",`+
		`"inputSchema":{"type":"object","properties":{"branch":{"type":"string"},`+
		`"target":{"type":"string","enum":["preview","production"],"default":%q}%s},"required":[%s]}}`,
		target, extraProps, required)
}

const versionTool = `{"name":"version","description":"Report the revision.","inputSchema":{"type":"object","properties":{}}}`

func changeStrings(cs []grant.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.String()
	}
	return out
}

func wantChanges(t *testing.T, got []grant.Change, want ...string) {
	t.Helper()
	g := changeStrings(got)
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Fatalf("changes:\n  %s\nwant:\n  %s", strings.Join(g, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestDiffCatalogsUnchanged(t *testing.T) {
	a := tools(versionTool, publishPreview("preview", "", `"branch"`))
	// Member order and spacing do not make a change.
	b := tools(`{ "inputSchema": {"properties":{}, "type":"object"}, "description":"Report the revision.", "name":"version"}`,
		publishPreview("preview", "", `"branch"`))
	wantChanges(t, grant.DiffCatalogs(a, b))
}

func TestDiffCatalogsDefaultChanged(t *testing.T) {
	old := tools(publishPreview("preview", "", `"branch"`))
	next := tools(publishPreview("production", "", `"branch"`))
	got := grant.DiffCatalogs(old, next)
	wantChanges(t, got, `publish_preview: default_changed: target: "preview" → "production"`)
	if got[0].Tool != "publish_preview" || got[0].Kind != "default_changed" {
		t.Errorf("change %+v", got[0])
	}
}

func TestDiffCatalogsToolsAddedRemoved(t *testing.T) {
	old := tools(versionTool, publishPreview("preview", "", `"branch"`))
	next := tools(publishPreview("preview", "", `"branch"`), `{"name":"slow_write","inputSchema":{"type":"object"}}`)
	wantChanges(t, grant.DiffCatalogs(old, next),
		"slow_write: tool_added: new tool",
		"version: tool_removed: tool no longer offered")
	// Against no earlier catalog, every tool is new.
	wantChanges(t, grant.DiffCatalogs(nil, tools(versionTool)), "version: tool_added: new tool")
}

func TestDiffCatalogsFieldsAndRequired(t *testing.T) {
	old := tools(publishPreview("preview", "", `"branch"`))
	next := tools(publishPreview("preview", `,"reason":{"type":"string"}`, `"branch","reason"`))
	wantChanges(t, grant.DiffCatalogs(old, next),
		"publish_preview: field_added: reason",
		"publish_preview: required_added: reason")
	wantChanges(t, grant.DiffCatalogs(next, old),
		"publish_preview: field_removed: reason",
		"publish_preview: required_removed: reason")
	// A field that stays but stops being required.
	opt := tools(publishPreview("preview", `,"reason":{"type":"string"}`, `"branch"`))
	wantChanges(t, grant.DiffCatalogs(next, opt), "publish_preview: required_removed: reason")
}

func TestDiffCatalogsEnumTypeDescription(t *testing.T) {
	old := tools(`{"name":"t","description":"one","inputSchema":{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]},"n":{"type":"integer"}}}}`)
	next := tools(`{"name":"t","description":"two","inputSchema":{"type":"object","properties":{"mode":{"type":"string","enum":["a","b","c"]},"n":{"type":"string"}}}}`)
	wantChanges(t, grant.DiffCatalogs(old, next),
		`t: description_changed: "one" → "two"`,
		`t: enum_changed: mode: ["a","b"] → ["a","b","c"]`,
		`t: type_changed: n: "integer" → "string"`)
}

func TestDiffCatalogsAnnotations(t *testing.T) {
	old := tools(`{"name":"t","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}`)
	next := tools(`{"name":"t","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":true}}`)
	wantChanges(t, grant.DiffCatalogs(old, next),
		`t: annotations_changed: {"readOnlyHint":true} → {"destructiveHint":true,"readOnlyHint":false}`)
	none := tools(`{"name":"t","inputSchema":{"type":"object"}}`)
	wantChanges(t, grant.DiffCatalogs(none, old),
		`t: annotations_changed: (none) → {"readOnlyHint":true}`)
}

func TestDiffCatalogsSorted(t *testing.T) {
	old := tools(`{"name":"b","inputSchema":{"type":"object","properties":{"x":{"type":"string"}}}}`,
		`{"name":"a","inputSchema":{"type":"object","properties":{}}}`)
	next := tools(`{"name":"a","inputSchema":{"type":"object","properties":{"z":{"type":"string"},"y":{"type":"string"}}}}`,
		`{"name":"c","inputSchema":{"type":"object"}}`)
	wantChanges(t, grant.DiffCatalogs(old, next),
		"a: field_added: y",
		"a: field_added: z",
		"b: tool_removed: tool no longer offered",
		"c: tool_added: new tool")
}
