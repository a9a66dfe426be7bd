package credentials

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// nodeGet runs the Node module's getCredential(scope, {MetaKey: call})
// (no _meta when call is "") with the test's environment and returns what
// it resolved to or rejected with.
func nodeGet(t *testing.T, scope, call string, timeoutMs int) (out struct {
	Secret  *string `json:"secret"`
	Name    string  `json:"name"`
	Code    string  `json:"code"`
	Scope   string  `json:"scope"`
	Message string  `json:"message"`
}) {
	t.Helper()
	node, _ := testenv.LookNode(t)
	mod := filepath.Join(testenv.RepoRoot(t), "npm", "mcpepoch", "credentials.mjs")
	script := `
const { getCredential, META_KEY } = await import(process.argv[1]);
const meta = process.argv[3] ? { [META_KEY]: process.argv[3], progressToken: 1 } : undefined;
const opts = process.argv[4] ? { timeoutMs: Number(process.argv[4]) } : {};
try {
  console.log(JSON.stringify({ secret: await getCredential(process.argv[2], meta, opts) }));
} catch (e) {
  console.log(JSON.stringify({ name: e.name, code: e.code, scope: e.scope, message: e.message }));
}`
	args := []string{"--input-type=module", "-e", script, "file://" + mod, scope, call}
	if timeoutMs > 0 {
		args = append(args, strconv.Itoa(timeoutMs))
	}
	cmd := exec.Command(node, args...)
	cmd.Env = os.Environ()
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, b)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("node printed %q: %v", b, err)
	}
	return out
}

// The Node module and the Go package give the same answers to the same
// broker: the secret, the host's code, a missing environment or call
// token, and broken answers reported without quoting them.
func TestNodeModuleSameShape(t *testing.T) {
	const planted = "PLANTED-node-91c2"
	t.Run("secret", func(t *testing.T) {
		reqs := fakeBroker(t, func([]byte) string { return `{"v":2,"secret":"` + planted + `"}` + "\n" })
		got := nodeGet(t, "inventory-api", "tok-n", 0)
		if got.Secret == nil || *got.Secret != planted {
			t.Fatalf("node got %+v", got)
		}
		if line := <-reqs; string(line) != `{"v":2,"scope":"inventory-api","call":"tok-n"}`+"\n" {
			t.Fatalf("node sent %q", line)
		}
	})
	t.Run("refused", func(t *testing.T) {
		fakeBroker(t, func([]byte) string {
			return `{"v":2,"error":{"code":"not_in_call","message":"the call token names no tools/call in flight"}}` + "\n"
		})
		got := nodeGet(t, "inventory-api", "tok", 0)
		_, goErr := Get(context.Background(), "inventory-api", meta("tok"))
		if got.Name != "CredentialError" || got.Code != "not_in_call" || got.Scope != "inventory-api" || got.Message != goErr.Error() {
			t.Fatalf("node got %+v; Go said %q", got, goErr)
		}
	})
	t.Run("not under host", func(t *testing.T) {
		t.Setenv(EnvSocket, "")
		got := nodeGet(t, "inventory-api", "tok", 0)
		_, goErr := Get(context.Background(), "inventory-api", meta("tok"))
		var ce *Error
		if got.Name != "NotUnderHostError" || !errors.Is(goErr, ErrNotUnderHost) || got.Message != goErr.Error() ||
			!errors.As(goErr, &ce) || got.Code != CodeNotUnderHost || ce.Code != got.Code || got.Scope != ce.Scope {
			t.Fatalf("node got %+v; Go said %q", got, goErr)
		}
	})
	t.Run("no call token", func(t *testing.T) {
		reqs := fakeBroker(t, func([]byte) string { return `{"v":2,"secret":"` + planted + `"}` + "\n" })
		got := nodeGet(t, "inventory-api", "", 0)
		_, goErr := Get(context.Background(), "inventory-api", nil)
		var ce *Error
		if got.Name != "CredentialError" || got.Code != CodeNoCall || !errors.As(goErr, &ce) || ce.Code != got.Code ||
			got.Secret != nil || !strings.Contains(got.Message, "extra._meta") {
			t.Fatalf("node got %+v; Go said %q", got, goErr)
		}
		select {
		case line := <-reqs:
			t.Fatalf("node asked without a call token: %q", line)
		default:
		}
	})
	for name, a := range map[string]string{
		"not json":      planted + "\n",
		"wrong version": `{"v":1,"secret":"` + planted + `"}` + "\n",
		"neither":       `{"v":2}` + "\n",
		"not an object": `["` + planted + `"]` + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			fakeBroker(t, func([]byte) string { return a })
			got := nodeGet(t, "inventory-api", "tok", 0)
			if got.Secret != nil || got.Name != "Error" || !strings.Contains(got.Message, "host broker") {
				t.Fatalf("node got %+v", got)
			}
			if strings.Contains(got.Message, planted) {
				t.Fatalf("node's error quotes the answer: %s", got.Message)
			}
		})
	}
	t.Run("no answer", func(t *testing.T) {
		fakeBroker(t, func([]byte) string { return "" })
		got := nodeGet(t, "inventory-api", "tok", 100)
		if got.Secret != nil || !strings.Contains(got.Message, "no answer within 100 ms") {
			t.Fatalf("node got %+v", got)
		}
	})
}
