package host_test

import (
	"fmt"
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// BenchmarkCredentialBroker measures a broker request during a granted
// call, through the real host: credserver, inside one write_secret call,
// asks the broker b.N times (a new connection, one line each way, a file
// source read each time) and makes as many round trips of the same shape
// to a unix socket echo of its own, in the same run. It reports both
// medians and their difference: the goal is a broker median under 1 ms
// (scripts/bench-credentials.sh checks it).
func BenchmarkCredentialBroker(b *testing.B) {
	p := newCredProject(b, "A")
	cmd := p.command(testenv.Mcpepoch(b), p.hostArgs(nil)...)
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	cs := connectGo(b, cmd, stderr, nil, "")
	waitFor(b, waitLong, "the host to report its agent run", func() bool { return listeningRe.MatchString(stderr.String()) })
	run := listeningRe.FindStringSubmatch(stderr.String())[1]
	p.ready(run)
	p.approve(run, "--tools", "write_secret", "--credential", "api", "--credential", "envsrc", "--credential", "vault")
	b.ResetTimer()
	text := callText(b, cs, "write_secret", map[string]any{"bench": b.N})
	b.StopTimer()
	var brokerNs, directNs, issued int
	if _, err := fmt.Sscanf(text, "broker_median_ns=%d direct_median_ns=%d issued=%d", &brokerNs, &directNs, &issued); err != nil {
		b.Fatalf("bench answer %q: %v", text, err)
	}
	if issued != b.N {
		b.Fatalf("%d of %d requests were issued: %s", issued, b.N, text)
	}
	b.ReportMetric(float64(brokerNs)/1e3, "broker-median-µs")
	b.ReportMetric(float64(directNs)/1e3, "direct-median-µs")
	b.ReportMetric(float64(brokerNs-directNs)/1e3, "overhead-µs")
}
