// Command bigserver is a minimal stdio MCP server, speaking newline-delimited
// JSON-RPC with the standard library only, whose one tool returns a large
// text result. The host package's benchmarks use it to measure the
// gateway's throughput for large messages, and its tests the message size
// limit in the server→client direction.
//
//	initialize   answers with the client's protocolVersion (2025-11-25 if
//	             absent) and capabilities {"tools":{}}
//	tools/list   one tool: big {bytes?: integer}
//	tools/call   big: a text result of bytes (default 1048576) "x" bytes
//	ping         {}
//
// Variables make it misbehave for the host's tests:
//
//	BIGSERVER_CURSOR=loop  tools/list pages for ever: the first page
//	                       lists big and nextCursor "more", the page of
//	                       "more" lists small and nextCursor "more" again
//	BIGSERVER_DISCOVER=exit  it exits 1 on server/discover, as servers
//	                       on older SDKs do on a request before initialize
//	BIGSERVER_LOG=FILE     each request's method (and cursor) is appended
//	                       to FILE, one line each
//
// and tools/call big with {"invalid": true} answers a text holding the
// bytes 0xff 0xfe, which are not UTF-8.
//
// Every other request, server/discover included, gets -32601, so a
// dual-era client falls back to the initialize handshake. Notifications are
// ignored. It exits 0 when stdin ends.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func main() {
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bigserver: %v\n", err)
		os.Exit(1)
	}
}

func serve(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 1<<20)
	w := bufio.NewWriterSize(out, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if err := handle(w, line); err != nil {
				return err
			}
			if err := w.Flush(); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func handle(w *bufio.Writer, line []byte) error {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return reply(w, nil, nil, &rpcError{-32700, "parse error: " + err.Error()})
	}
	if len(req.ID) == 0 {
		return nil // a notification
	}
	var cursor struct {
		Cursor string `json:"cursor"`
	}
	json.Unmarshal(req.Params, &cursor)
	if log := os.Getenv("BIGSERVER_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		fmt.Fprintf(f, "%s %s\n", req.Method, cursor.Cursor)
		f.Close()
	}
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-11-25"
		}
		return reply(w, req.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "bigserver", "version": "1"},
		}, nil)
	case "ping":
		return reply(w, req.ID, map[string]any{}, nil)
	case "server/discover":
		if os.Getenv("BIGSERVER_DISCOVER") == "exit" {
			fmt.Fprintln(os.Stderr, "bigserver: server/discover before initialize")
			os.Exit(1)
		}
	case "tools/list":
		if os.Getenv("BIGSERVER_CURSOR") == "loop" {
			name := "big"
			if cursor.Cursor != "" {
				name = "small"
			}
			return reply(w, req.ID, map[string]any{"tools": []any{map[string]any{
				"name": name, "inputSchema": map[string]any{"type": "object"},
			}}, "nextCursor": "more"}, nil)
		}
		return reply(w, req.ID, map[string]any{"tools": []any{map[string]any{
			"name":        "big",
			"description": "Return a text result of the given size.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{
				"bytes": map[string]any{"type": "integer", "minimum": 0},
			}},
		}}}, nil)
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Bytes   *int `json:"bytes"`
				Invalid bool `json:"invalid"`
			} `json:"arguments"`
		}
		json.Unmarshal(req.Params, &p)
		if p.Name != "big" {
			return reply(w, req.ID, nil, &rpcError{-32602, fmt.Sprintf("unknown tool %q", p.Name)})
		}
		if p.Arguments.Invalid {
			fmt.Fprintf(w, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"a\xff\xfeb\"}]}}\n", req.ID)
			return nil
		}
		n := 1 << 20
		if p.Arguments.Bytes != nil {
			n = *p.Arguments.Bytes
		}
		text := string(bytes.Repeat([]byte("x"), n))
		return reply(w, req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}, nil)
	}
	return reply(w, req.ID, nil, &rpcError{-32601, "method not found: " + req.Method})
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// reply writes one response line.
func reply(w *bufio.Writer, id json.RawMessage, result any, e *rpcError) error {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		m["error"] = e
	} else {
		m["result"] = result
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	w.Write(b)
	return w.WriteByte('\n')
}
