package localapi

import (
	"slices"
	"testing"
)

// TestRenewalRequest: the renewal as prepared approves its pre-selected
// tools and scopes; a changed or added tool joins only when named, with
// the scopes it uses; a name that is neither adds nothing.
func TestRenewalRequest(t *testing.T) {
	r := &Renewal{ID: "sha256:00", Epoch: "E", CatalogRevision: "sha256:c", Tools: []string{"b"}, Credentials: []string{"s1"},
		Expires: "30m0s", Changed: []RenewalChange{{Tool: "a", Credentials: []string{"s0", "s1"}}, {Tool: "c"}},
		Added: []RenewalChange{{Tool: "n", Credentials: []string{"s2"}}}}
	req := r.Request(nil, ChannelTerminal)
	if !slices.Equal(req.Tools, []string{"b"}) || !slices.Equal(req.Credentials, []string{"s1"}) || req.Renewal != r.ID ||
		req.Epoch != "E" || req.Catalog != "sha256:c" || req.Expires != "30m0s" || req.Channel != ChannelTerminal || req.All {
		t.Errorf("as prepared: %+v", req)
	}
	req = r.Request([]string{"a", "b", "zzz"}, ChannelScript)
	if !slices.Equal(req.Tools, []string{"a", "b"}) || !slices.Equal(req.Credentials, []string{"s0", "s1"}) {
		t.Errorf("with a included: tools %v, scopes %v; want [a b], [s0 s1]", req.Tools, req.Credentials)
	}
	if !slices.Equal(r.Tools, []string{"b"}) || !slices.Equal(r.Credentials, []string{"s1"}) {
		t.Errorf("Request changed the renewal: %+v", r)
	}
	if got := r.ChangedTools(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("ChangedTools() = %v", got)
	}
	req = r.Request([]string{"n"}, ChannelTerminal)
	if !slices.Equal(req.Tools, []string{"b", "n"}) || !slices.Equal(req.Credentials, []string{"s1", "s2"}) {
		t.Errorf("with the added n included: tools %v, scopes %v; want [b n], [s1 s2]", req.Tools, req.Credentials)
	}
	if got := r.AddedTools(); !slices.Equal(got, []string{"n"}) {
		t.Errorf("AddedTools() = %v", got)
	}
}
