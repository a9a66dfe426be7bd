// Command credserver is a minimal stdio MCP server, speaking newline-delimited
// JSON-RPC with the standard library only, whose tools ask the host's
// credentials broker for a secret while they run, speaking the broker's
// protocol itself (one JSON line each way). The host package's credential
// tests run it through the real host.
//
// Every tool takes the same optional arguments and answers with one text
// line per request it made to the broker: "issued sha256:<12 hex>" (never
// the secret itself) or "refused <code>: <message>".
//
//	scope    the scope to ask for (default "api")
//	wait_ms  wait this long before asking
//	wait_for then wait until this file exists
//	times    ask this many times (default 1)
//	via      "child": ask from a child process (a descendant of the server)
//	call     send this call token instead of the one the host put in the
//	         request's params._meta["dev.mcpepoch/call"]
//	out      also append "rev=$CRED_REV <answers>" to this file
//	bench    instead, ask this many times and make as many round trips,
//	         each a new connection carrying one line each way, to a unix
//	         socket echo of its own; answer "broker_median_ns=N
//	         direct_median_ns=M issued=K"
//
// Tools: write_secret and pay ask during the call; plain asks too (the
// tests' policy gives it no scope); env answers with the broker's socket,
// the call's token and whether CRED_TEST_ENV_SECRET is in its environment
// ("socket=… call=… env_secret=yes|no") without asking; ask_later answers
// at once and asks after wait_ms, outside any call, writing the answer to
// out.
//
// "credserver ask SCOPE CALL" asks once and prints the answer line: what
// via=child runs.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type args struct {
	Scope   string `json:"scope"`
	WaitMS  int    `json:"wait_ms"`
	WaitFor string `json:"wait_for"`
	Times   int    `json:"times"`
	Via     string `json:"via"`
	Call    string `json:"call"`
	Out     string `json:"out"`
	Bench   int    `json:"bench"`
}

var (
	mu  sync.Mutex
	out = bufio.NewWriter(os.Stdout)
)

func main() {
	if len(os.Args) == 4 && os.Args[1] == "ask" {
		fmt.Println(ask(os.Args[2], os.Args[3]))
		return
	}
	r := bufio.NewReader(os.Stdin)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			handle(line)
		}
		if err != nil {
			return
		}
	}
}

// ask makes one broker request for the call whose token is call and
// describes the answer.
func ask(scope, call string) string {
	c, err := net.DialTimeout("unix", os.Getenv("MCPEPOCH_CREDENTIALS_SOCKET"), 10*time.Second)
	if err != nil {
		return "refused dial: " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	b, _ := json.Marshal(map[string]any{"v": 2, "scope": scope, "call": call})
	if _, err := c.Write(append(b, '\n')); err != nil {
		return "refused write: " + err.Error()
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return "refused read: " + err.Error()
	}
	var a struct {
		V      int     `json:"v"`
		Secret *string `json:"secret"`
		Error  *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &a); err != nil || a.V != 2 {
		return fmt.Sprintf("refused bad answer: %q", line)
	}
	if a.Error != nil {
		return "refused " + a.Error.Code + ": " + a.Error.Message
	}
	sum := sha256.Sum256([]byte(*a.Secret))
	return "issued sha256:" + hex.EncodeToString(sum[:6])
}

// run carries out the requests of one tool call whose token is call.
func run(a args, call string) string {
	if a.Scope == "" {
		a.Scope = "api"
	}
	if a.Call != "" {
		call = a.Call
	}
	time.Sleep(time.Duration(a.WaitMS) * time.Millisecond)
	for a.WaitFor != "" {
		if _, err := os.Stat(a.WaitFor); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if a.Bench > 0 {
		return bench(a, call)
	}
	var answers []string
	for i := 0; i < max(a.Times, 1); i++ {
		if a.Via == "child" {
			self, _ := os.Executable()
			o, err := exec.Command(self, "ask", a.Scope, call).Output()
			if err != nil {
				answers = append(answers, "refused child: "+err.Error())
				continue
			}
			answers = append(answers, strings.TrimSpace(string(o)))
			continue
		}
		answers = append(answers, ask(a.Scope, call))
	}
	text := strings.Join(answers, "\n")
	if a.Out != "" {
		f, err := os.OpenFile(a.Out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintf(f, "rev=%s %s\n", os.Getenv("CRED_REV"), strings.ReplaceAll(text, "\n", " | "))
			f.Close()
		}
	}
	return text
}

// bench times a.Bench broker requests against as many round trips to an
// echo socket of this process, in the same run.
func bench(a args, call string) string {
	dir, err := os.MkdirTemp("", "credecho")
	if err != nil {
		return "refused bench: " + err.Error()
	}
	defer os.RemoveAll(dir)
	l, err := net.Listen("unix", filepath.Join(dir, "echo.sock"))
	if err != nil {
		return "refused bench: " + err.Error()
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				bufio.NewReader(c).ReadBytes('\n')
				c.Write([]byte("{\"v\":2,\"secret\":\"echo\"}\n"))
			}()
		}
	}()
	echo := func() {
		c, err := net.Dial("unix", l.Addr().String())
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := json.Marshal(map[string]any{"v": 2, "scope": a.Scope, "call": call})
		c.Write(append(b, '\n'))
		bufio.NewReader(c).ReadBytes('\n')
	}
	var brokerNs, directNs []int64
	ok := 0
	for range a.Bench {
		start := time.Now()
		if strings.HasPrefix(ask(a.Scope, call), "issued ") {
			ok++
		}
		brokerNs = append(brokerNs, time.Since(start).Nanoseconds())
		start = time.Now()
		echo()
		directNs = append(directNs, time.Since(start).Nanoseconds())
	}
	return fmt.Sprintf("broker_median_ns=%d direct_median_ns=%d issued=%d", median(brokerNs), median(directNs), ok)
}

func median(xs []int64) int64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func handle(line []byte) {
	var req request
	if json.Unmarshal(line, &req) != nil || len(req.ID) == 0 {
		return
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
		reply(req.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "credserver", "version": os.Getenv("CRED_REV")},
		}, nil)
	case "ping":
		reply(req.ID, map[string]any{}, nil)
	case "tools/list":
		var tools []any
		for _, name := range []string{"write_secret", "pay", "plain", "env", "ask_later"} {
			tools = append(tools, map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}})
		}
		reply(req.ID, map[string]any{"tools": tools}, nil)
	case "tools/call":
		go call(req)
	default:
		reply(req.ID, nil, map[string]any{"code": -32601, "message": "method not found: " + req.Method})
	}
}

func call(req request) {
	var p struct {
		Name      string         `json:"name"`
		Arguments args           `json:"arguments"`
		Meta      map[string]any `json:"_meta"`
	}
	json.Unmarshal(req.Params, &p)
	token, _ := p.Meta["dev.mcpepoch/call"].(string)
	var text string
	switch p.Name {
	case "env":
		has := "no"
		if _, ok := os.LookupEnv("CRED_TEST_ENV_SECRET"); ok {
			has = "yes"
		}
		text = fmt.Sprintf("socket=%s call=%s env_secret=%s", os.Getenv("MCPEPOCH_CREDENTIALS_SOCKET"), token, has)
	case "ask_later":
		go run(p.Arguments, token)
		text = "asking later"
	default:
		text = run(p.Arguments, token)
	}
	reply(req.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}, nil)
}

func reply(id json.RawMessage, result, e any) {
	m := map[string]any{"jsonrpc": "2.0", "id": id}
	if e != nil {
		m["error"] = e
	} else {
		m["result"] = result
	}
	b, _ := json.Marshal(m)
	mu.Lock()
	defer mu.Unlock()
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
}
