// Command askserver is a minimal stdio MCP server, speaking newline-delimited
// JSON-RPC with the standard library only, that sends requests to the client
// on demand, always under the same id. The host package's tests use it to
// check that the client's answer reaches the server that asked, under that
// server's own id, and no other server.
//
//	initialize   answers with the client's protocolVersion (2025-11-25 if
//	             absent) and capabilities {"tools":{}}
//	tools/list   one tool: ask {method: string}
//	tools/call   ask: writes the request
//	             {"jsonrpc":"2.0","id":1,"method":<method>,"params":{}}
//	             to the client, then answers the call with the text
//	             "asked <method> revision=<R>"
//	ping         {}
//
// Every response the client sends (a message with an id and no method) is
// appended to the file ASKSERVER_LOG as one JSON line
// {"pid":<pid>,"revision":<R>,"message":<the response as received>}.
// R is ASKSERVER_REVISION ("A" if unset). Every other request gets -32601;
// notifications are ignored. It exits 0 when stdin ends.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// askID is the id of every request the server sends to the client.
const askID = 1

type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type server struct {
	out      *bufio.Writer
	revision string
	log      string
}

func main() {
	s := &server{out: bufio.NewWriter(os.Stdout), revision: os.Getenv("ASKSERVER_REVISION"), log: os.Getenv("ASKSERVER_LOG")}
	if s.revision == "" {
		s.revision = "A"
	}
	r := bufio.NewReaderSize(os.Stdin, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if herr := s.handle(line); herr != nil {
				fmt.Fprintf(os.Stderr, "askserver: %v\n", herr)
				os.Exit(1)
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *server) handle(line []byte) error {
	var m message
	if json.Unmarshal(line, &m) != nil {
		fmt.Fprintf(os.Stderr, "askserver: ignored a line that is not JSON: %.100q\n", line)
		return nil
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method == "" && hasID:
		return s.logResponse(line)
	case !hasID:
		return nil // a notification
	}
	defer s.out.Flush()
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(m.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-11-25"
		}
		s.reply(m.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "askserver", "version": s.revision},
		}, nil)
	case "ping":
		s.reply(m.ID, map[string]any{}, nil)
	case "tools/list":
		s.reply(m.ID, map[string]any{"tools": []any{map[string]any{
			"name": "ask", "description": "Send a request to the client.",
			"inputSchema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"method": map[string]any{"type": "string"}},
				"required":   []string{"method"},
			},
		}}}, nil)
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Method string `json:"method"`
			} `json:"arguments"`
		}
		if json.Unmarshal(m.Params, &p) != nil || p.Name != "ask" || p.Arguments.Method == "" {
			s.reply(m.ID, nil, map[string]any{"code": -32602, "message": "want tool ask with a method"})
			return nil
		}
		s.write(map[string]any{"jsonrpc": "2.0", "id": askID, "method": p.Arguments.Method, "params": map[string]any{}})
		s.reply(m.ID, map[string]any{"content": []any{map[string]any{
			"type": "text", "text": fmt.Sprintf("asked %s revision=%s", p.Arguments.Method, s.revision),
		}}}, nil)
	default:
		s.reply(m.ID, nil, map[string]any{"code": -32601, "message": "method not found: " + m.Method})
	}
	return nil
}

// logResponse appends a response from the client to the log file.
func (s *server) logResponse(line []byte) error {
	if s.log == "" {
		return nil
	}
	b, err := json.Marshal(map[string]any{"pid": os.Getpid(), "revision": s.revision, "message": json.RawMessage(line)})
	if err != nil {
		return err
	}
	f, err := os.OpenFile(s.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *server) reply(id json.RawMessage, result, e any) {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		m["error"] = e
	} else {
		m["result"] = result
	}
	s.write(m)
}

func (s *server) write(m map[string]any) {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err) // the server builds every message from marshalable values
	}
	s.out.Write(b)
	s.out.WriteByte('\n')
}
