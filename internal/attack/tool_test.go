package attack_test

// The agent's own program: what an agent writes and runs when a shell
// command is not enough (a raw socket request, a rewritten hash chain, a
// scan of every process's environment). It is this test binary, started
// by the agent's shell as "$AGENT_TOOL" with toolEnv set; TestMain runs
// runTool then, and nothing of the tests.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/credwire"
	"github.com/mcpepoch/mcpepoch/epoch"
	"github.com/mcpepoch/mcpepoch/internal/layout"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/localapi"
	"github.com/mcpepoch/mcpepoch/notify"
	"github.com/mcpepoch/mcpepoch/trust"
)

// toolEnv, set to 1, makes this binary the agent's tool.
const toolEnv = "MCPEPOCH_ATTACK_TOOL"

// runTool runs one command of the agent's tool in the working directory
// (the project) and returns its exit status:
//
//	sockdir                        print the directory of the project's host sockets
//	approve RUN EPOCH TOOL SCOPE   send an approval of TOOL with the credential scope
//	                               SCOPE on EPOCH to RUN's host over its socket,
//	                               claiming a terminal; exit 1 when refused
//	broker SCOPE                   ask every broker of the project for SCOPE's
//	                               secret, with no call token; exit 1 when every
//	                               one refused
//	hold RUN                       hold every socket slot of RUN's host, and its
//	                               overflow lane, with connections that send half a
//	                               request and wait, each renewed at once when the
//	                               host drops it; "held" on stdout once they are,
//	                               until SIGTERM
//	rechain LOG                    rewrite LOG (an audit log) and its head: drop its
//	                               last record, then chain every record anew
//	forge-floor                    weaken the project's policy floor to what
//	                               mcpepoch.toml says, as an earlier host's: append
//	                               to the audit log a trust_pinned record naming it
//	                               (keeping the copy of the head when the state
//	                               directory can be written), then write it as the
//	                               floor file; exit 1 when either failed
//	environ VALUE                  look for VALUE in the initial environment of
//	                               every process (/proc/PID/environ); print the pids
//	                               whose environment was readable, and those that
//	                               hold it
func runTool(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "agent tool: no command")
		return 2
	}
	root, err := os.Getwd()
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent tool:", err)
		return 1
	}
	sockDir, err := notify.Dir(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agent tool:", err)
		return 1
	}
	switch {
	case args[0] == "sockdir" && len(args) == 1:
		fmt.Println(sockDir)
		return 0
	case args[0] == "approve" && len(args) == 5:
		return toolApprove(filepath.Join(sockDir, args[1]+notify.SocketSuffix), args[2], args[3], args[4])
	case args[0] == "broker" && len(args) == 2:
		return toolBroker(sockDir, args[1])
	case args[0] == "hold" && len(args) == 2:
		return toolHold(filepath.Join(sockDir, args[1]+notify.SocketSuffix))
	case args[0] == "rechain" && len(args) == 2:
		return toolRechain(args[1])
	case args[0] == "forge-floor" && len(args) == 1:
		return toolForgeFloor(root)
	case args[0] == "environ" && len(args) == 2:
		return toolEnviron(args[1])
	}
	fmt.Fprintf(os.Stderr, "agent tool: unknown command %q\n", args)
	return 2
}

func toolApprove(sock, ep, tool, scope string) int {
	payload, _ := json.Marshal(localapi.ApproveRequest{Epoch: epoch.Epoch(ep), Tools: []string{tool}, Credentials: []string{scope},
		Channel: localapi.ChannelTerminal})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := notify.Send(ctx, sock, notify.Request{Type: localapi.TypeApprove, Payload: payload})
	if err != nil {
		fmt.Println("refused:", err)
		return 1
	}
	if resp.Error != "" {
		fmt.Println("refused:", resp.Error)
		return 1
	}
	fmt.Printf("approved: %s %s\n", resp.Type, resp.Payload)
	return 0
}

func toolBroker(sockDir, scope string) int {
	socks, _ := filepath.Glob(filepath.Join(sockDir, "*.cred"))
	if len(socks) == 0 {
		fmt.Println("no broker socket in", sockDir)
		return 1
	}
	issued := false
	for _, s := range socks {
		c, err := net.DialTimeout("unix", s, 10*time.Second)
		if err != nil {
			fmt.Printf("%s: %v\n", s, err)
			continue
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		b, _ := json.Marshal(credwire.Request{V: credwire.Version, Scope: scope})
		c.Write(append(b, '\n'))
		line, err := bufio.NewReader(c).ReadBytes('\n')
		c.Close()
		var a credwire.Answer
		if err == nil {
			err = json.Unmarshal(line, &a)
		}
		switch {
		case err != nil:
			fmt.Printf("%s: %v\n", s, err)
		case a.Error != nil:
			fmt.Printf("%s: refused %s: %s\n", s, a.Error.Code, a.Error.Message)
		default:
			issued = true
			fmt.Printf("%s: issued a secret of %d bytes\n", s, len(a.Secret))
		}
	}
	if issued {
		return 0
	}
	return 1
}

func toolHold(sock string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	wait := testenv.HoldSlots(ctx, sock, 3*notify.MaxConns)
	time.Sleep(500 * time.Millisecond) // every slot and the overflow lane taken
	fmt.Println("held")
	wait()
	return 0
}

func toolRechain(path string) int {
	recs, err := audit.Read(path)
	if err == nil && len(recs) < 2 {
		err = fmt.Errorf("%s: %d records, nothing to drop", path, len(recs))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rechain:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "rechain")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rechain:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "audit.jsonl")
	l, err := audit.Open(tmp, nil)
	for _, r := range recs[:len(recs)-1] {
		if err == nil {
			_, err = l.Append(audit.Event{Type: r.Type, Epoch: r.Epoch, Run: r.Run, Fields: r.Fields, Time: r.Time})
		}
	}
	if l != nil {
		l.Close()
	}
	for _, p := range [][2]string{{tmp, path}, {audit.HeadPath(tmp), audit.HeadPath(path)}} {
		var b []byte
		if err == nil {
			b, err = os.ReadFile(p[0])
		}
		if err == nil {
			err = os.WriteFile(p[1], b, 0o600)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rechain:", err)
		return 1
	}
	fmt.Printf("rewrote %s: %d records\n", path, len(recs)-1)
	return 0
}

func toolForgeFloor(root string) int {
	cfg, err := config.Load(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "forge-floor:", err)
		return 1
	}
	f := trust.FloorOf(root, cfg)
	code := 0
	var opts *audit.Options
	if state, err := layout.ProjectState(root); err == nil && writable(state) {
		opts = &audit.Options{CopyDir: state}
	}
	l, err := audit.Open(layout.Audit(root), opts)
	if err == nil {
		_, err = l.Append(audit.Event{Type: audit.TypeTrustPinned, Fields: map[string]any{"floor": f}})
		l.Close()
	}
	if err != nil {
		fmt.Println("the audit line:", err)
		code = 1
	} else {
		fmt.Printf("the audit line: appended (copy of the head kept: %v)\n", opts != nil)
	}
	dir, err := trust.DefaultDir()
	if err == nil {
		err = trust.SaveFloor(dir, f, "first_use", time.Now())
	}
	if err != nil {
		fmt.Println("the floor file:", err)
		code = 1
	} else {
		fmt.Println("the floor file: written")
	}
	return code
}

// writable reports whether files can be made in the directory dir,
// making it when missing.
func writable(dir string) bool {
	if os.MkdirAll(dir, 0o700) != nil {
		return false
	}
	f, err := os.CreateTemp(dir, "probe")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

func toolEnviron(value string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		fmt.Fprintln(os.Stderr, "environ:", err)
		return 1
	}
	self := os.Getpid()
	var readable, holding []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		readable = append(readable, e.Name())
		if bytes.Contains(b, []byte(value)) {
			cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			holding = append(holding, fmt.Sprintf("%d (%s)", pid, strings.ReplaceAll(string(bytes.TrimRight(cmd, "\x00")), "\x00", " ")))
		}
	}
	fmt.Printf("readable: %s\n", strings.Join(readable, " "))
	for _, h := range holding {
		fmt.Println("holds it:", h)
	}
	return 0
}
