// Command echoserver is the smallest MCP stdio server the benchmarks
// need: one line per message, tools echo (returns its text argument),
// big (returns BYTES bytes of text, default 1 MiB), big5 (five times
// that) and slow (returns its
// text after ms milliseconds, reading nothing meanwhile). It reads only what it
// answers with, so that it costs the same whatever sits in front of it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"strconv"
	"strings"
	"time"
)

type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string `json:"name"`
		Arguments struct {
			Text string `json:"text"`
			MS   int    `json:"ms"`
		} `json:"arguments"`
	} `json:"params"`
}

const tools = `{"tools":[{"name":"echo","description":"returns its text","inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}},` +
	`{"name":"big","description":"returns a large text","inputSchema":{"type":"object"}},` +
	`{"name":"big5","description":"returns five times big's text","inputSchema":{"type":"object"}},` +
	`{"name":"slow","description":"returns its text after ms milliseconds","inputSchema":{"type":"object","properties":{"text":{"type":"string"},"ms":{"type":"integer"}}}}]}`

func main() {
	size := flag.Int("bytes", 1<<20, "size of the big tool's text")
	flag.Parse()
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", *size) + `"}]}`
	big5 := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 5**size) + `"}]}`
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := make([]byte, 0, 64<<10)
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return
		}
		var m message
		if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 {
			continue // notifications need no answer
		}
		var result string
		switch m.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"echoserver","version":"1"}}`
		case "tools/list":
			result = tools
		case "tools/call":
			switch m.Params.Name {
			case "big":
				result = big
			case "big5":
				result = big5
			case "slow":
				time.Sleep(time.Duration(m.Params.Arguments.MS) * time.Millisecond)
				fallthrough
			default:
				result = `{"content":[{"type":"text","text":` + strconv.Quote(m.Params.Arguments.Text) + `}]}`
			}
		default:
			result = `{}`
		}
		out = append(out[:0], `{"jsonrpc":"2.0","id":`...)
		out = append(out, m.ID...)
		out = append(out, `,"result":`...)
		out = append(out, result...)
		out = append(out, "}\n"...)
		if _, err := os.Stdout.Write(out); err != nil {
			return
		}
	}
}
