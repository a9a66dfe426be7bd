// Command echoserver is a minimal stdio MCP server, speaking
// newline-delimited JSON-RPC with the standard library only, that shows
// what reached it: the host package's tests use it to check that the
// gateway forwards a message byte for byte, and that it passes odd
// results back.
//
//	initialize   answers with the client's protocolVersion and
//	             capabilities {"tools":{}}
//	tools/list   echo (inputSchema {"type":"object"}, no constraint on
//	             any argument), bounded {n: integer, maximum 2^53} and
//	             deep {depth: integer}
//	tools/call   echo and bounded: a text result holding the request line
//	             exactly as read, line ending included; deep: a result
//	             whose structuredContent is depth nested arrays
//
// Other requests get -32601; notifications are ignored. It exits 0 when
// stdin ends.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

func main() {
	r := bufio.NewReaderSize(os.Stdin, 1<<20)
	w := bufio.NewWriter(os.Stdout)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			handle(w, line)
			w.Flush()
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "echoserver: %v\n", err)
			os.Exit(1)
		}
	}
}

var tools = []any{
	map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}},
	map[string]any{"name": "bounded", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
		"n": map[string]any{"type": "integer", "maximum": 9007199254740992},
	}}},
	map[string]any{"name": "deep", "inputSchema": map[string]any{"type": "object", "properties": map[string]any{
		"depth": map[string]any{"type": "integer", "minimum": 0},
	}}},
}

func handle(w *bufio.Writer, line []byte) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
			Name            string `json:"name"`
			Arguments       struct {
				Depth int `json:"depth"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(line, &req); err != nil {
		reply(w, nil, nil, map[string]any{"code": -32700, "message": "parse error: " + err.Error()})
		return
	}
	if len(req.ID) == 0 {
		return
	}
	switch {
	case req.Method == "initialize":
		reply(w, req.ID, map[string]any{"protocolVersion": req.Params.ProtocolVersion,
			"capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo":   map[string]any{"name": "echoserver", "version": "1"}}, nil)
	case req.Method == "tools/list":
		reply(w, req.ID, map[string]any{"tools": tools}, nil)
	case req.Method == "tools/call" && req.Params.Name == "deep":
		// Written by hand: encoding/json refuses to write what it could
		// not read back (over 10000 levels).
		d := req.Params.Arguments.Depth
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[],"structuredContent":{"v":%s%s}}}`+"\n",
			req.ID, bytes.Repeat([]byte("["), d), bytes.Repeat([]byte("]"), d))
	case req.Method == "tools/call":
		reply(w, req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": string(line)}}}, nil)
	default:
		reply(w, req.ID, nil, map[string]any{"code": -32601, "message": "method not found: " + req.Method})
	}
}

func reply(w *bufio.Writer, id json.RawMessage, result, e any) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		m["error"] = e
	} else {
		m["result"] = result
	}
	b, _ := json.Marshal(m)
	w.Write(append(b, '\n'))
}
