package epoch

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

func TestIDsAreULIDsOfTheirTime(t *testing.T) {
	at := time.UnixMilli(1_767_225_600_123)
	for name, s := range map[string]string{
		"run":   string(NewRunID(at)),
		"build": string(NewBuildID(at)),
		"grant": string(NewGrantID(at)),
		"epoch": string(New(at)),
	} {
		u, err := ulid.ParseStrict(s)
		if err != nil {
			t.Errorf("%s id %q: %v", name, s, err)
			continue
		}
		if got := ulid.Time(u.Time()); !got.Equal(at) {
			t.Errorf("%s id %q carries time %v, want %v", name, s, got, at)
		}
	}
	if a, b := NewGrantID(at), NewGrantID(at); a == b {
		t.Error("two grant ids minted at the same time are equal")
	}
}

func TestIDsAreStringsOnTheWire(t *testing.T) {
	v := struct {
		Run   RunID   `json:"run"`
		Build BuildID `json:"build"`
		Grant GrantID `json:"grant"`
	}{"R", "B", "G"}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"run":"R","build":"B","grant":"G"}` {
		t.Errorf("json = %s, %v", b, err)
	}
}
