package approval

import (
	"slices"
	"testing"
	"time"
)

// What a renewal offers: the unchanged tools pre-selected at the
// shortest expiry they had, changed and new ones offered but not
// selected, vanished ones dropped, and nothing a grant of this kind
// cannot cover.
func TestRenewalOffer(t *testing.T) {
	t.Parallel()
	var c Covered
	c.Add([]string{"list", "read", "write"}, []string{"db"}, map[string]string{"list": "s1", "read": "r1", "write": "w1"}, "1h")
	c.Add([]string{"read", "gone", "exempt", "pay"}, nil, map[string]string{"read": "r1", "gone": "g1", "exempt": "e1", "pay": "p1"}, "30m")
	c.Add([]string{"deploy", "lookup"}, nil, map[string]string{"deploy": "d1", "lookup": "l1"}, "run-ends")
	c.Add([]string{"read"}, nil, map[string]string{"read": "r1"}, "2h") // a longer one later: the shortest holds
	o := c.Offer(map[string]Offered{
		"list":    {Definition: "s1"},
		"read":    {Definition: "r1", Credentials: []string{"db"}},
		"write":   {Definition: "w2", Credentials: []string{"db"}},   // redefined
		"deploy":  {Definition: "d1", Credentials: []string{"prod"}}, // a scope no ended grant named
		"lookup":  {Definition: "l1"},
		"exempt":  {Definition: "e1", Exempt: true},
		"pay":     {Definition: "p1", Credentials: []string{"card"}, PerCall: true},
		"new":     {Definition: "n1", New: true},
		"new-pc":  {Definition: "n2", New: true, PerCall: true},
		"new-ex":  {Definition: "n3", New: true, Exempt: true},
		"updated": {Definition: "u1"}, // changed since the last approval, not new, never approved
	})
	for _, tc := range []struct {
		what      string
		got, want []string
	}{
		{"pre-selected", o.Tools, []string{"list", "lookup", "read"}},
		{"credentials", o.Credentials, []string{"db"}},
		{"changed", o.Changed, []string{"deploy", "write"}},
		{"added", o.Added, []string{"new"}},
		{"dropped", o.Dropped, []string{"gone"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
	if o.Expires != 30*time.Minute {
		t.Errorf("expires %v, want the shortest of the pre-selected tools' grants, 30m", o.Expires)
	}
	if o := (&Covered{}).Offer(nil); o.Tools != nil || o.Expires != 0 {
		t.Errorf("nothing covered: %+v", o)
	}
}
