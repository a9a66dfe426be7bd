package localapi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/mcpepoch/mcpepoch/notify"
)

// FuzzMuxServe: the local API dispatch never panics on any request a peer
// can send, and a handler runs only for a permitted peer and a request its
// route's check accepts (a build_complete names a ULID and a clean absolute
// manifest path).
func FuzzMuxServe(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"type":"build_complete","build":"01J9Z6Y3N4D5X8QK2M7R3T1V0A","manifest":"/src/app/.mcpepoch/manifest.toml"}`,
		`{"v":1,"type":"build_complete","build":"01j9z6y3n4d5x8qk2m7r3t1v0a","manifest":"/src/../etc/passwd"}`,
		`{"v":1,"type":"status"}`,
		`{"v":1,"type":"approve","payload":{"grant":null}}`,
		`{"v":1,"type":"nope"}`,
	} {
		f.Add([]byte(s), int32(os.Geteuid()), true)
		f.Add([]byte(s), int32(os.Geteuid()+1), true)
	}
	f.Fuzz(func(t *testing.T, line []byte, uid int32, checked bool) {
		var req notify.Request
		if json.Unmarshal(line, &req) != nil {
			return
		}
		m := NewMux(Routes())
		ran := ""
		for _, r := range Routes() {
			m.Handle(r.Type, func(ctx context.Context, peer notify.Peer, req notify.Request) notify.Response {
				ran = req.Type
				return notify.Response{Type: "ok"}
			})
		}
		peer := notify.Peer{UID: int(uid), Checked: checked}
		resp := m.Serve(context.Background(), peer, req)
		if ran == "" {
			if resp.Type != notify.TypeError {
				t.Fatalf("no handler ran, yet the response is %+v", resp)
			}
			return
		}
		if checked && int(uid) != os.Geteuid() {
			t.Fatalf("handler for %q ran for peer uid %d", req.Type, uid)
		}
		if req.Type == TypeBuildComplete {
			if _, err := ulid.ParseStrict(req.Build); err != nil || !filepath.IsAbs(req.Manifest) || filepath.Clean(req.Manifest) != req.Manifest {
				t.Fatalf("build_complete handler ran for build %q, manifest %q", req.Build, req.Manifest)
			}
		}
	})
}
