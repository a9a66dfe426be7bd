package host_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/mcpepoch/mcpepoch/internal/softkey"
	"github.com/mcpepoch/mcpepoch/internal/testenv"
	"github.com/mcpepoch/mcpepoch/trust"
)

// TestApproveRefusesAtOnceWhatCannotCount: mcpepoch approve says before
// any review, question or signature that the way it was asked to approve
// cannot count, and names what does: --web with no authenticator
// enrolled, --ssh with a plain key, --yes (and so a terminal) where only
// presence counts.
func TestApproveRefusesAtOnceWhatCannotCount(t *testing.T) {
	t.Parallel()
	testenv.Need(t, "script", testenv.InstallUtilLinux)
	p, env := newDefaultProofProject(t)
	s := gConnect(t, p, env...)
	s.list()
	p.ready(s.run)

	out, code := p.runCLI(env, "approve", "--web", "--no-open", "--run", s.run, "--tools", "slow_write")
	if code == 0 || !strings.Contains(out.Stderr, "no authenticator enrolled: run mcpepoch enroll --web or --ssh KEY.pub first") || strings.Contains(out.Stdout, "http://") {
		t.Errorf("approve --web with nothing enrolled: exit %d\n%s", code, out)
	}

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "plain")
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(p.dir, "plain")
	if err := os.WriteFile(plain, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code = p.runCLI(env, "approve", "--ssh", plain, "--run", s.run, "--tools", "slow_write")
	if code == 0 || !strings.Contains(out.Stderr, "a plain key never proves presence") || strings.Contains(out.Combined, "touch your key") {
		t.Errorf("approve --ssh with a plain key: exit %d\n%s", code, out)
	}
	s.close()

	// An sk key enrolled before the host starts: presence is the default.
	a, err := trust.NewSSH(softkey.NewSSHEd25519().AuthorizedKey("test key"), "test key", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p.enroll(a)
	s = gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	out, code = p.runCLI(env, "approve", "--yes", "--run", s.run, "--tools", "slow_write", "--credential", gStaging)
	if code != 4 || !strings.Contains(out.Stderr, "counts only presence") || !strings.Contains(out.Stderr, "mcpepoch approve --web") ||
		strings.Contains(out.Stdout, "catalog") {
		t.Errorf("approve --yes where only presence counts: exit %d, want 4 before any review\n%s", code, out)
	}
	out, code = p.shell(env, `printf 'y\n' | script -qec "$MCPEPOCH_BIN `+approveArgs(s.run)+`" /dev/null`)
	if code == 0 || !strings.Contains(out.Combined, "an approval at a terminal proves only terminal, and this project counts only presence") ||
		strings.Contains(out.Combined, "catalog") || strings.Contains(out.Combined, "[y/N]") {
		t.Errorf("approve at a terminal where only presence counts: exit %d, want a refusal before the review and the question\n%s", code, out)
	}
	out, code = p.runCLI(env, "approve", "--web", "--no-open", "--run", s.run, "--tools", "slow_write")
	if code == 0 || !strings.Contains(out.Stderr, "only ssh keys: approve with mcpepoch approve --ssh KEY") {
		t.Errorf("approve --web with only an ssh key enrolled: exit %d\n%s", code, out)
	}
}

// TestApprovalRefusalCarriesOnlyItsOwnCause: an approval refused for its
// proof does not carry the note of an unrelated setting the policy floor
// holds (an exempt list widened after the first start).
func TestApprovalRefusalCarriesOnlyItsOwnCause(t *testing.T) {
	t.Parallel()
	p, env := newDefaultProofProject(t)
	s := gConnect(t, p, env...)
	s.list()
	s.close() // the first start set the floor
	p.write("mcpepoch.toml", strings.Replace(p.read("mcpepoch.toml"), `exempt = ["version"]`, `exempt = ["version", "publish_preview"]`, 1))
	s = gConnect(t, p, env...)
	s.list()
	p.ready(s.run)
	out, code := p.runCLI(env, "approve", "--yes", "--run", s.run, "--tools", "slow_write", "--credential", gStaging)
	if code == 0 || !strings.Contains(out.Stderr, "proves only same-user") || strings.Contains(out.Stderr, "policy floor") {
		t.Errorf("approve --yes refused for its proof, with the floor holding exempt: exit %d\n%s", code, out)
	}
}
