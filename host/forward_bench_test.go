package host

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/jsonrpc"
)

// BenchmarkForward measures the host's own work on one answer of a
// tools/call, in process: framing it off the server's stdout (readLines),
// reading its envelope (jsonrpc.Parse), matching its id and finding
// isError, for a small and a 1 MiB result, with the server writing
// results first (as the TypeScript SDK does) or last (as go-sdk does).
// scripts/bench.sh measures the same path between real processes.
func BenchmarkForward(b *testing.B) {
	for _, size := range []int{200, 1 << 20} {
		text := strings.Repeat("x", size)
		for _, order := range []string{"id-first", "result-first"} {
			line := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":%q}],"isError":false}}`, text)
			if order == "result-first" {
				line = fmt.Sprintf(`{"result":{"content":[{"type":"text","text":%q}],"isError":false},"jsonrpc":"2.0","id":7}`, text)
			}
			input := []byte(line + "\n")
			b.Run(fmt.Sprintf("%s/%dB", order, size), func(b *testing.B) {
				b.SetBytes(int64(len(input)))
				r := &repeatReader{line: input, n: b.N}
				got := 0
				b.ResetTimer()
				readLines(r, 16<<20, func(line []byte, _ *overflow) {
					m, err := jsonrpc.Parse(line)
					if err != nil || jsonrpc.IDKey(m.ID) != "n7" || toolError(m.Result) {
						b.Fatalf("parse: %v", err)
					}
					_ = withNewline(line)
					got++
				})
				if got != b.N {
					b.Fatalf("%d lines, want %d", got, b.N)
				}
			})
		}
	}
}

// repeatReader yields line n times, in reads of at most 1 MiB, as a
// pipe of that size would.
type repeatReader struct {
	line []byte
	n    int
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), 1<<20)], r.line[r.off:])
	if r.off += k; r.off == len(r.line) {
		r.off, r.n = 0, r.n-1
	}
	return k, nil
}

// BenchmarkParseClient measures the strict reading of a client's
// tools/call, the request direction's per-message cost.
func BenchmarkParseClient(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("y", 150) + `"},"_meta":{"progressToken":3}}}`)
	for b.Loop() {
		if m, err := jsonrpc.ParseClient(line); err != nil || m.Tool != "echo" {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadLinesBig measures framing results of 1 MiB and of 5 MiB
// off the server's stdout, back to back: the cost per MiB should not grow
// with the size (readLinesMore keeps its buffer while long lines keep
// coming, instead of dropping it after each one and growing it again).
func BenchmarkReadLinesBig(b *testing.B) {
	for _, size := range []int{1 << 20, 5 << 20} {
		input := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":%q}]}}`, strings.Repeat("x", size)) + "\n")
		b.Run(fmt.Sprintf("%dMiB", size>>20), func(b *testing.B) {
			b.SetBytes(int64(len(input)))
			b.ReportAllocs()
			r := &repeatReader{line: input, n: b.N}
			got := 0
			b.ResetTimer()
			readLinesMore(r, 16<<20, func(line []byte, _ *overflow, _ bool) {
				if len(line) != len(input)-1 {
					b.Fatalf("line of %d bytes, want %d", len(line), len(input)-1)
				}
				got++
			})
			if got != b.N {
				b.Fatalf("%d lines, want %d", got, b.N)
			}
		})
	}
}
