package notify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzDispatch: any line a peer sends on the local socket gets a response
// that encodes to one line, never a panic; only requests that pass
// Validate reach the handler.
func FuzzDispatch(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"type":"status"}`,
		`{"v":1,"type":"build_complete","build":"01J9Z6Y3N4D5X8QK2M7R3T1V0A","manifest":"/src/app/.mcpepoch/manifest.toml"}`,
		`{"v":2,"type":"status"}`,
		`{"v":1}`,
		`{"v":1,"type":"status","build":null,"exitCode":1e400}`,
		`[]`, `{`, ` `, "{\"v\":1,\"type\":\"\x1b[2J\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		reached := false
		h := func(ctx context.Context, peer Peer, req Request) Response {
			reached = true
			if err := req.Validate(); err != nil {
				t.Fatalf("handler got a request that fails Validate: %v", err)
			}
			return Response{Type: "status"}
		}
		resp := dispatch(context.Background(), Peer{UID: -1}, line, h, nil)
		if resp.Type == "" || (resp.Type == TypeError) == reached {
			t.Fatalf("line %q: response %+v (handler reached: %v)", line, resp, reached)
		}
		b, err := json.Marshal(resp)
		if err != nil || bytes.IndexByte(b, '\n') >= 0 {
			t.Fatalf("response %+v does not encode to one line: %q, %v", resp, b, err)
		}
	})
}

// FuzzReadLine: the socket framing splits any input into lines of at most
// MaxLine bytes, the same way however reads are cut.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"v\":1}\n{\"v\":1}\r\nno newline"))
	f.Add([]byte("\n\n"))
	f.Add([]byte(strings.Repeat("x", 70<<10) + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		read := func(r *bufio.Reader) []string {
			var out []string
			for {
				line, err := ReadLine(r)
				if err != nil {
					out = append(out, "ERR:"+err.Error())
					return out
				}
				if len(line) > MaxLine {
					t.Fatalf("line of %d bytes", len(line))
				}
				out = append(out, string(line))
			}
		}
		a := read(bufio.NewReaderSize(bytes.NewReader(data), 64<<10))
		b := read(bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(data)), 16))
		if strings.Join(a, "\x00") != strings.Join(b, "\x00") {
			t.Fatalf("whole reads %q, one-byte reads %q", a, b)
		}
	})
}
