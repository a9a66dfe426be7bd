package host_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpepoch/mcpepoch/audit"
	"github.com/mcpepoch/mcpepoch/internal/procstat"
)

// TestEnvSourceInNoEnviron: the value of an env credential source, given
// to mcpepoch host in its environment as an MCP client does, is in no
// process's initial environment once the host runs (/proc/PID/environ,
// which any process of the user can read): not the host's, not its
// guard's, not the server's or its children's, not a command source's;
// and the host still hands it to an approved call. The guard starts with
// no environment at all.
func TestEnvSourceInNoEnviron(t *testing.T) {
	t.Parallel()
	var raw [12]byte
	rand.Read(raw[:])
	secret := "env-secret-" + hex.EncodeToString(raw[:]) // this test's own: other tests' hosts never hold it
	p := newCredProject(t, "A")
	environ := filepath.Join(p.secrets, "vault.environ")
	// The command source saves its own initial environment.
	p.write("mcpepoch.toml", fmt.Sprintf(`label = "cred-test"
command = ["sh", "./server.sh"]

[grants]
exempt = ["env", "ask_later"]
proof = ["same-user"]

[credentials.envsrc]
tools = ["write_secret"]
env = "CRED_TEST_ENV_SECRET"

[credentials.vault]
tools = ["write_secret"]
command = ["sh", "-c", %q]
`, "cat /proc/$$/environ > "+environ+"; cat "+filepath.Join(p.secrets, "vault.token")))
	s := gConnect(t, p.project, "CRED_TEST_ENV_SECRET="+secret)
	s.list() // the catalog, which an approval reviews
	p.approve(s.run, "--tools", "write_secret", "--credential", "envsrc", "--credential", "vault")
	wantAnswer(t, s.text("write_secret", map[string]any{"scope": "envsrc"}), issued(secret))
	wantAnswer(t, s.text("write_secret", map[string]any{"scope": "vault"}), issued(cVaultSecret))

	// A call in flight, its server and a child of it running.
	calls := len(filterType(p.records(), audit.TypeToolCalled))
	release := filepath.Join(t.TempDir(), "release")
	var wg sync.WaitGroup
	wg.Go(func() { s.text("write_secret", map[string]any{"scope": "envsrc", "wait_for": release}) })
	p.waitRecords("the call in flight", func(recs []audit.Record) bool {
		return len(filterType(recs, audit.TypeToolCalled)) == calls+1
	})

	hostPID := s.cmd.Process.Pid
	tree := descendants(t, hostPID)
	if len(tree) < 3 { // the host, its guard, the server (sh execs credserver)
		t.Fatalf("the host's process tree %v: want the host, a guard and the server", tree)
	}
	for _, pid := range environHolding(t, secret) {
		where := "not of the host's tree"
		if tree[pid] {
			where = "of the host's tree"
		}
		t.Errorf("process %d (%s, %s) holds the secret in its initial environment", pid, cmdline(pid), where)
	}
	guards := 0
	for pid := range tree {
		if strings.Contains(cmdline(pid), "trap '' HUP INT TERM QUIT") {
			guards++
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err != nil || len(b) != 0 {
				t.Errorf("the guard %d has an environment: %q (%v)", pid, b, err)
			}
		}
	}
	if guards == 0 {
		t.Errorf("no guard among the host's processes %v", tree)
	}
	if b, err := os.ReadFile(environ); err != nil || len(b) == 0 || bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte("CRED_TEST_ENV_SECRET")) {
		t.Errorf("the command source's environment (%v) holds the env source: %q", err, b)
	}
	os.WriteFile(release, nil, 0o600)
	wg.Wait()
}

// descendants returns pid and every process below it, as /proc says now.
func descendants(t *testing.T, pid int) map[int]bool {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := procstat.Read(n); err == nil {
			parent[n] = st.PPID
		}
	}
	tree := map[int]bool{pid: true}
	for changed := true; changed; {
		changed = false
		for n, pp := range parent {
			if tree[pp] && !tree[n] {
				tree[n], changed = true, true
			}
		}
	}
	return tree
}

// environHolding returns the processes, other than this test's, whose
// initial environment holds value.
func environHolding(t *testing.T, value string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || n == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", n)); err == nil && bytes.Contains(b, []byte(value)) {
			out = append(out, n)
		}
	}
	return out
}

// cmdline returns pid's command line, arguments separated by spaces.
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
