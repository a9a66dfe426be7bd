package credenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// helperEnv makes the test binary, run by TestWithholdStartsAgain, act as
// a host: withhold CREDENV_TEST_SECRET, and once started again print what
// it received and what its initial environment holds.
const helperEnv = "CREDENV_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helper())
	}
	os.Exit(m.Run())
}

func helper() int {
	got, err := Received()
	if err != nil {
		fmt.Println("received:", err)
		return 1
	}
	if err := Withhold([]string{"CREDENV_TEST_SECRET", "CREDENV_TEST_OTHER"}, got); err != nil {
		fmt.Println("withhold:", err)
		return 1
	}
	initial := ""
	if runtime.GOOS == "linux" {
		b, _ := os.ReadFile("/proc/self/environ")
		initial = string(b)
	}
	_, fdLeft := os.LookupEnv(EnvFD)
	json.NewEncoder(os.Stdout).Encode(map[string]any{"received": got, "initial": initial, "pid": os.Getpid(), "fd_left": fdLeft})
	return 0
}

// TestWithholdStartsAgain: a process with a variable to withhold starts
// itself again, same pid, without it in its environment (its initial one
// included), and gets its value over the pipe; EnvFD is gone once read.
func TestWithholdStartsAgain(t *testing.T) {
	const secret = "s3cr3t-credenv-9f1b"
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", "CREDENV_TEST_SECRET="+secret)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	var r struct {
		Received map[string]string `json:"received"`
		Initial  string            `json:"initial"`
		PID      int               `json:"pid"`
		FDLeft   bool              `json:"fd_left"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("helper printed %q: %v", out, err)
	}
	if r.Received["CREDENV_TEST_SECRET"] != secret || len(r.Received) != 1 {
		t.Errorf("received %v", r.Received)
	}
	if r.PID != cmd.Process.Pid {
		t.Errorf("started again as pid %d, want the same pid %d", r.PID, cmd.Process.Pid)
	}
	if strings.Contains(r.Initial, secret) || strings.Contains(r.Initial, "CREDENV_TEST_SECRET") {
		t.Errorf("the initial environment still holds the variable: %q", r.Initial)
	}
	if r.FDLeft {
		t.Errorf("%s left in the environment after Received", EnvFD)
	}
}

// TestReceivedRefusesOtherDescriptors: EnvFD naming a descriptor that is
// not a pipe, or a standard one, is an error, and nothing is read.
func TestReceivedRefusesOtherDescriptors(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, v := range []string{"0", "2", "x", fmt.Sprint(f.Fd())} {
		t.Setenv(EnvFD, v)
		if got, err := Received(); err == nil || got != nil {
			t.Errorf("%s=%s: %v, %v; want an error", EnvFD, v, got, err)
		}
		if _, ok := os.LookupEnv(EnvFD); ok {
			t.Errorf("%s=%s left in the environment", EnvFD, v)
		}
	}
	os.Unsetenv(EnvFD)
	if got, err := Received(); got != nil || err != nil {
		t.Errorf("without %s: %v, %v", EnvFD, got, err)
	}
}

// TestWithholdNothingHeld: with none of the variables set, Withhold
// returns at once.
func TestWithholdNothingHeld(t *testing.T) {
	if err := Withhold([]string{"CREDENV_TEST_UNSET_VARIABLE"}, nil); err != nil {
		t.Fatal(err)
	}
}
