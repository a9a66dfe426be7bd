package credbroker

import (
	"bufio"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/credwire"
)

// FuzzReadRequest: any input is either one well-formed request or a
// refusal with a code; a refusal's message never quotes the input, which
// may hold a token.
func FuzzReadRequest(f *testing.F) {
	for _, s := range []string{
		`{"v":2,"scope":"api","call":"t0k3n"}` + "\n",
		`{"v":1,"scope":"api","token":"t0k3n"}` + "\n",
		`{"v":2,"scope":"api","call":"t0k3n","x":1}` + "\n",
		`{"v":2,"scope":"","call":"t0k3n"}` + "\n",
		`{"v":"2","call":"t0k3n"}` + "\n",
		`{"t0k3n":1}` + "\n", `{"v":2,"scope":{"t0k3n":1},"call":"t0k3n"}` + "\n",
		"t0k3n\n", "", "\n", `{"v":2,"call":"t0k3n"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		req, code, msg := readRequest(bufio.NewReaderSize(strings.NewReader(in), credwire.MaxLine))
		if code == "" {
			if req.V != credwire.Version || req.Scope == "" || req.Call == "" {
				t.Fatalf("accepted %+v from %q", req, in)
			}
			return
		}
		if msg != "" && len(in) >= 5 && strings.Contains(in, "t0k3n") && strings.Contains(msg, "t0k3n") {
			t.Fatalf("refusal %q quotes the input %q", msg, in)
		}
	})
}
