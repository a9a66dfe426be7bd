package host_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/credbroker"
	"github.com/mcpepoch/mcpepoch/credwire"
)

// TestCredentialBrokerNotStarvedByOtherProcesses: a process that is not the
// server holds more connections to the epoch's broker socket than it
// serves at once, sending nothing; each is refused wrong_process at the
// accept, and a granted call's own request still gets its secret.
func TestCredentialBrokerNotStarvedByOtherProcesses(t *testing.T) {
	t.Parallel()
	p := newCredProject(t, "A")
	s := cConnect(t, p)
	socket, _, _ := brokerEnv(t, s)
	p.approve(s.run, "--tools", "write_secret", "--credential", "api", "--credential", "envsrc", "--credential", "vault")
	var hog []net.Conn
	t.Cleanup(func() {
		for _, c := range hog {
			c.Close()
		}
	})
	for range 2 * credbroker.MaxConns {
		c, err := net.DialTimeout("unix", socket, waitLong)
		if err != nil {
			t.Fatalf("hog connection %d: %v", len(hog), err)
		}
		hog = append(hog, c)
	}
	c := hog[len(hog)-1]
	c.SetReadDeadline(time.Now().Add(waitLong))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, credwire.CodeWrongProcess) {
		t.Fatalf("a hog connection was answered %q (%v), want %s at once", line, err, credwire.CodeWrongProcess)
	}
	wantAnswer(t, s.text("write_secret", nil), issued(cApiSecret))
}
