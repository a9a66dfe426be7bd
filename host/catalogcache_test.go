package host

import (
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/mcpepoch/mcpepoch/build"
)

// revisionCatalogs are tools arrays whose revisions and digests are
// checked against RFC 8785 applied to the whole array.
var revisionCatalogs = [][]string{
	{},
	{`{"name":"a"}`},
	{`{ "name" : "a", "inputSchema": {"type":"object","properties":{"n":{"type":"number","maximum":1E3}}} }`,
		`{"name":"b\u00e9","description":"caf\u00e9 \"quoted\" \n","annotations":{"readOnlyHint":true},"z":[1.50,-0.0,1e21,{"y":null,"x":false}]}`},
	{`{"name":"a","inputSchema":{"type":"object","maximum":1e400}}`, `{"name":"b"}`},
	{`{"name":"b"}`, `{"name":"a","inputSchema":{"type":"object","maximum":1e400}}`},
}

// The catalog revision is the digest of the RFC 8785 form of the tools
// array, and each tool's digest that of its own RFC 8785 form, whether a
// definition was canonicalised now or lent by the catalog it replaces;
// without a canonical form (1e400), the digest of the bytes as sent.
func TestCatalogRevisionIsCanonicalArray(t *testing.T) {
	var prev *Catalog
	for round := range 2 {
		for _, tools := range revisionCatalogs {
			raw := make([]json.RawMessage, len(tools))
			for i, s := range tools {
				raw[i] = json.RawMessage(s)
			}
			cat, err := newCatalogAfter(prev, raw)
			if err != nil {
				t.Fatalf("newCatalogAfter(%s): %v", tools, err)
			}
			arr, err := json.Marshal(raw)
			if err != nil {
				t.Fatal(err)
			}
			want := arr
			if canon, err := jcs.Transform(arr); err == nil {
				want = canon
			}
			if got := build.Digest(cat.Revision); got != build.DigestBytes(want) {
				t.Errorf("round %d, %s: revision %s, want the digest of %s", round, tools, got, want)
			}
			for i, def := range raw {
				want := build.DigestBytes(def)
				if canon, err := jcs.Transform(def); err == nil {
					want = build.DigestBytes(canon)
				}
				if cat.digests[i] != want {
					t.Errorf("round %d, tool %s: digest %s, want %s", round, def, cat.digests[i], want)
				}
				if cat.Names[i] != toolName(def) {
					t.Errorf("round %d, tool %s: name %q", round, def, cat.Names[i])
				}
			}
			if round == 1 {
				prev = cat // the second round lends each catalog to the next
			}
		}
	}
}

// A re-list takes unchanged definitions from the catalog it replaces, and
// a definition whose bytes changed under the same name is canonicalised
// anew: its changed digest is what makes a call tool_changed.
func TestCatalogAfterReusesOnlyEqualBytes(t *testing.T) {
	a := json.RawMessage(`{"name":"a","inputSchema":{"type":"object"}}`)
	b1 := json.RawMessage(`{"name":"b","inputSchema":{"type":"object","properties":{"to":{"type":"string","default":"preview"}}}}`)
	b2 := json.RawMessage(`{"name":"b","inputSchema":{"type":"object","properties":{"to":{"type":"string","default":"production"}}}}`)
	first, err := newCatalog([]json.RawMessage{a, b1})
	if err != nil {
		t.Fatal(err)
	}
	// b changed, and the server lists it first now.
	second, err := newCatalogAfter(first, []json.RawMessage{b2, a})
	if err != nil {
		t.Fatal(err)
	}
	if second.Names[0] != "b" || second.Names[1] != "a" {
		t.Fatalf("names %v, want [b a]", second.Names)
	}
	if &second.canon[1][0] != &first.canon[0][0] {
		t.Errorf("unchanged tool a was canonicalised again")
	}
	if second.digests[0] == first.digests[1] {
		t.Errorf("tool b's changed definition kept the old digest")
	}
	if second.Revision == first.Revision {
		t.Errorf("the revision did not change with tool b")
	}
}

// What a client was shown follows the bytes of each tools/list result it
// is given, when it lists the same result again too: a changed definition
// marks the tool as shown otherwise, whatever was listed before.
func TestNoteListedFollowsEachResult(t *testing.T) {
	a := `{"name":"a","inputSchema":{"type":"object"}}`
	b1 := `{"name":"b","inputSchema":{"type":"object","properties":{"to":{"type":"string","default":"preview"}}}}`
	b2 := `{"name":"b","inputSchema":{"type":"object","properties":{"to":{"type":"string","default":"production"}}}}`
	h := checkHost(t, a, b1)
	current := h.tools["b"].digest
	other, _ := toolDigest(json.RawMessage(b2))
	for i, shown := range []struct {
		b    string
		want build.Digest
	}{{b1, current}, {b2, other}, {b2, other}, {b1, current}, {b2, other}} {
		h.noteListedLocked(h.child, json.RawMessage(`{"tools":[`+a+`,`+shown.b+`]}`))
		if got := h.informed["b"]; got != shown.want {
			t.Errorf("listing %d: the client is taken to know b as %s, want %s", i, got.Short(), shown.want.Short())
		}
		if got := h.informed["a"]; got != h.tools["a"].digest {
			t.Errorf("listing %d: a is known as %s, want the catalog's %s", i, got.Short(), h.tools["a"].digest.Short())
		}
	}
}

// A prompts or resources list has the digest of its RFC 8785 form whether
// it was canonicalised now or is the list fetched the last time, and a
// list that changed has another.
func TestDigestListFollowsEachFetch(t *testing.T) {
	h := New(Options{})
	p1 := []json.RawMessage{json.RawMessage(`{ "name": "review", "description": "Review a change" }`)}
	p2 := []json.RawMessage{json.RawMessage(`{"name":"review","description":"Review a change, strictly"}`)}
	want := func(items []json.RawMessage) build.Digest {
		arr, _ := json.Marshal(items)
		canon, err := jcs.Transform(arr)
		if err != nil {
			t.Fatal(err)
		}
		return build.DigestBytes(canon)
	}
	for i, items := range [][]json.RawMessage{p1, p1, p2, p2, p1, nil} {
		if items == nil {
			if got, empty := h.digestList("prompts/list", nil), want([]json.RawMessage{}); got != empty {
				t.Errorf("fetch %d: digest %s of no prompts, want %s", i, got.Short(), empty.Short())
			}
			continue
		}
		if got := h.digestList("prompts/list", items); got != want(items) {
			t.Errorf("fetch %d: digest %s, want %s", i, got.Short(), want(items).Short())
		}
	}
	if h.digestList("resources/list", p2) != want(p2) {
		t.Errorf("resources/list: a list of another method is digested otherwise")
	}
}
