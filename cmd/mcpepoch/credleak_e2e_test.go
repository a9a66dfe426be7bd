package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// plantedSecret is the supplier token of TestCredentialNeverLeaks: a value
// that appears nowhere else, so that finding it anywhere is a leak.
const plantedSecret = "PLANTED-supplier-token-8c41f0e2d7b9"

// leakSession is a session of the example through real processes, with
// every output it printed kept for the search.
type leakSession struct {
	*project
	outputs map[string]string // what each command printed, by a name of the step
}

// run runs mcpepoch with args, keeps its output under name, and returns it.
func (s *leakSession) run(name string, args ...string) (testenv.Output, int) {
	s.t.Helper()
	out, code := s.mcpepoch(args...)
	s.outputs[name] = out.Combined
	return out, code
}

// approve lists the tools, as a client does before it calls them, then
// approves every tool, with the credential scopes they use, as the same
// user (the project's proof allows it).
func (s *leakSession) approve(c *testenv.Client, name string) {
	s.t.Helper()
	if _, rerr := c.List(); rerr != nil {
		s.t.Fatalf("tools/list: %v", rerr)
	}
	if out, code := s.run(name, "approve", "--yes", "--all"); code != 0 {
		s.t.Fatalf("approve: exit %d\n%s", code, out)
	}
}

// order calls inventory_order and returns the result's text and whether it
// was an error, a JSON-RPC refusal included.
func (s *leakSession) order(c *testenv.Client, name string, qty int) (string, bool) {
	s.t.Helper()
	res, rerr := c.Call("inventory_order", map[string]any{"sku": "bolt", "quantity": qty})
	if rerr != nil {
		s.outputs[name] = rerr.Error()
		return rerr.Error(), true
	}
	s.outputs[name] = res.Text()
	return res.Text(), res.IsError
}

// TestCredentialNeverLeaks plants a supplier token in the host's
// environment and runs a whole session through real processes: a refused
// call, an approval, a call that gets the token, a broker request from a
// process that is not the server, a rebuild (the prepared call refused, a
// new approval), a crash of the server and its recovery. The server proves
// it had the token (its orders carry the token's HMAC); the token appears
// in no file under .mcpepoch/ (manifest, audit log, grants, host records,
// sockets' directory) and in nothing the host, record, approve, status
// --json, grants, audit show and audit verify printed.
func TestCredentialNeverLeaks(t *testing.T) {
	t.Parallel()
	dir := testenv.NodeExample(t)
	s := &leakSession{project: &project{t: t, dir: dir, bin: testenv.Mcpepoch(t)}, outputs: map[string]string{}}
	f, err := os.OpenFile(s.path("mcpepoch.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[grants]\nproof = [\"same-user\"]\n")
	f.Close()
	s.record()

	c := testenv.Driver(t, dir, []string{"INVENTORY_SUPPLIER_TOKEN=" + plantedSecret}, s.bin, "host", "--", "node", "dist/server.js")
	if text, isErr := s.order(c, "call before approval", 1); !isErr || !strings.Contains(text, "authorization_required") {
		t.Fatalf("order before approval = %q, want authorization_required", text)
	}
	s.approve(c, "approve A")
	if text, isErr := s.order(c, "call A", 2); isErr {
		t.Fatalf("order on approved epoch A: %s\n%s", text, c.Stderr())
	}
	s.brokerFromOutside()

	// Rebuild: the prepared call is refused before any secret is handed
	// over; a new approval lets revision B have it.
	s.setRevision("B")
	s.build()
	s.outputs["record B"] = s.record()
	if _, err := c.WaitListChanged(1, 60*time.Second); err != nil {
		t.Logf("no list_changed after the rebuild: %v", err)
	}
	if text, isErr := s.order(c, "call after rebuild", 3); !isErr || !strings.Contains(text, "authorization_stale") {
		t.Fatalf("order after the rebuild = %q, want authorization_stale", text)
	}
	s.approve(c, "approve B")
	if text, isErr := s.order(c, "call B", 4); isErr {
		t.Fatalf("order on approved epoch B: %s\n%s", text, c.Stderr())
	}

	// A crash: the host starts the server again under a new epoch, whose
	// calls need a new approval.
	before := s.onlyHost()
	if err := syscall.Kill(before.Execution.ProcessID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.waitNewEpoch(before.Execution.Epoch)
	if text, isErr := s.order(c, "call after crash", 5); !isErr {
		t.Fatalf("order after the crash = %q, want a refusal", text)
	}
	s.approve(c, "approve after crash")
	if text, isErr := s.order(c, "call after crash approved", 6); isErr {
		t.Fatalf("order after the crash, approved: %s\n%s", text, c.Stderr())
	}

	for _, args := range [][]string{{"status", "--json"}, {"status"}, {"grants", "--json"}, {"grants"}, {"audit", "show"}, {"audit", "verify"}} {
		s.run(strings.Join(args, " "), args...)
	}
	s.checkOrders(map[string]int{"A": 2, "B": 4 + 6})
	s.checkAudit()
	c.Close()
	s.outputs["host stderr"] = c.Stderr()

	for name, out := range s.outputs {
		if strings.Contains(out, plantedSecret) {
			t.Errorf("the secret is in what %s printed:\n%s", name, out)
		}
	}
	n := 0
	filepath.WalkDir(s.path(".mcpepoch"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		n++
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), plantedSecret) {
			t.Errorf("the secret is in %s", p)
		}
		return nil
	})
	if n < 4 {
		t.Errorf("only %d files under .mcpepoch: the search looked at too little", n)
	}
}

// brokerFromOutside asks the running epoch's broker for the scope from the
// test process, which is not the server or its descendant: refused, and
// no secret in the answer.
func (s *leakSession) brokerFromOutside() {
	s.t.Helper()
	ep := s.onlyHost().Execution.Epoch
	var sock string
	filepath.WalkDir(s.path(".mcpepoch"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == ep+".cred" {
			sock = p
		}
		return nil
	})
	if sock == "" {
		s.t.Fatalf("no broker socket %s.cred under .mcpepoch", ep)
	}
	conn, err := net.Dial("unix", sock)
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, `{"v":1,"scope":"inventory-supplier","token":"guessed"}`+"\n")
	line, _ := bufio.NewReader(conn).ReadString('\n')
	s.outputs["broker from outside"] = line
	if !strings.Contains(line, `"error"`) || !strings.Contains(line, "wrong_process") {
		s.t.Errorf("broker answered a process outside the server with %q, want wrong_process", line)
	}
}

// waitNewEpoch waits until the host runs an epoch other than old.
func (s *leakSession) waitNewEpoch(old string) {
	s.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out, code := s.mcpepoch("status", "--json")
		var all []hostStatus
		if code == 0 && json.Unmarshal([]byte(out.Stdout), &all) == nil && len(all) == 1 &&
			all[0].Execution != nil && all[0].Execution.Epoch != old && all[0].State == "ready" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.t.Fatalf("the host did not start a new epoch after the crash of epoch %s", old)
}

// checkOrders checks that the server signed each order with the planted
// token: the proof that the secret was handed over at all. want is the
// quantity ordered per revision.
func (s *leakSession) checkOrders(want map[string]int) {
	s.t.Helper()
	b, err := os.ReadFile(s.path("data/orders.jsonl"))
	if err != nil {
		s.t.Fatal(err)
	}
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var o struct {
			SKU       string `json:"sku"`
			Quantity  int    `json:"quantity"`
			Revision  string `json:"revision"`
			Signature string `json:"signature"`
		}
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			s.t.Fatalf("orders.jsonl: %v: %q", err, line)
		}
		m := hmac.New(sha256.New, []byte(plantedSecret))
		fmt.Fprintf(m, "%s %d %s", o.SKU, o.Quantity, o.Revision)
		if o.Signature != hex.EncodeToString(m.Sum(nil)) {
			s.t.Errorf("order %+v is not signed with the planted token", o)
		}
		got[o.Revision] += o.Quantity
	}
	for rev, q := range want {
		if got[rev] != q {
			s.t.Errorf("revision %s ordered %d, want %d (orders: %s)", rev, got[rev], q, b)
		}
	}
}

// checkAudit checks that the audit log recorded the issues and the
// refusal by scope.
func (s *leakSession) checkAudit() {
	s.t.Helper()
	b, err := os.ReadFile(s.path(".mcpepoch/audit.jsonl"))
	if err != nil {
		s.t.Fatal(err)
	}
	issued, denied := strings.Count(string(b), `"credential_issued"`), strings.Count(string(b), `"credential_denied"`)
	if issued != 3 || denied < 1 {
		s.t.Errorf("audit log: %d credential_issued (want 3), %d credential_denied (want at least 1)", issued, denied)
	}
}
