// Command lateserver is a minimal stdio MCP server, speaking newline-delimited
// JSON-RPC with the standard library only, that answers late: its one tool
// never answers until the server is being stopped. The host package's tests
// use it to check that answers from a stopped server never reach the client.
//
//	initialize   answers with the client's protocolVersion (2025-11-25 if
//	             absent) and capabilities {"tools":{}}
//	tools/list   one tool: hang {}
//	tools/call   hang: no answer until the server is stopped
//	ping         {}
//
// When stdin ends or SIGTERM arrives, it answers every hang call still
// pending with the text result "late", sends a
// notifications/tools/list_changed, and exits 0. Every other request gets
// -32601.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type server struct {
	mu      sync.Mutex
	out     *bufio.Writer
	pending []json.RawMessage
	ended   bool
}

func main() {
	s := &server{out: bufio.NewWriter(os.Stdout)}
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	go func() {
		<-terms
		s.end("SIGTERM")
	}()
	r := bufio.NewReader(os.Stdin)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.handle(line)
		}
		if err != nil {
			break
		}
	}
	s.end("end of stdin")
}

// end answers the pending calls late and exits.
func (s *server) end(why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended = true
	fmt.Fprintf(os.Stderr, "lateserver: %s: answering %d pending calls late\n", why, len(s.pending))
	for _, id := range s.pending {
		s.replyLocked(id, map[string]any{"content": []any{map[string]any{"type": "text", "text": "late"}}}, nil)
	}
	s.writeLocked(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
	s.out.Flush()
	os.Exit(0)
}

func (s *server) handle(line []byte) {
	var req request
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.out.Flush()
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-11-25"
		}
		s.replyLocked(req.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "lateserver", "version": "1"},
		}, nil)
	case "ping":
		s.replyLocked(req.ID, map[string]any{}, nil)
	case "tools/list":
		s.replyLocked(req.ID, map[string]any{"tools": []any{map[string]any{
			"name": "hang", "description": "Answer only when stopped.",
			"inputSchema": map[string]any{"type": "object"},
		}}}, nil)
	case "tools/call":
		s.pending = append(s.pending, req.ID)
	default:
		s.replyLocked(req.ID, nil, map[string]any{"code": -32601, "message": "method not found: " + req.Method})
	}
}

func (s *server) replyLocked(id json.RawMessage, result, e any) {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		m["error"] = e
	} else {
		m["result"] = result
	}
	s.writeLocked(m)
}

func (s *server) writeLocked(m map[string]any) {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	s.out.Write(b)
	s.out.WriteByte('\n')
}
