package ceremony

import (
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/softkey"
)

// The targets these measure (scripts/bench-approval.sh checks them): the
// approval page is served within 50 ms of the request, and from the
// authenticator's answer reaching the server to the decision delivered
// through Approval.Decided at most 100 ms. Each reports the median and
// 90th percentile of its samples in ms; ns/op includes untimed set-up.

func report(b *testing.B, prefix string, s []time.Duration) {
	slices.Sort(s)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(s[len(s)/2]), prefix+"-ms")
	b.ReportMetric(ms(s[(len(s)*9+9)/10-1]), prefix+"-p90-ms")
}

// BenchmarkApprovalPage: GET of an approval page, trust store opened and
// checked, options built, page rendered and read whole.
func BenchmarkApprovalPage(b *testing.B) {
	h := newHarness(b, false)
	h.enroll(softkey.NewWebAuthn())
	a, _ := h.srv.Approve(request(newDigest(b)))
	var s []time.Duration
	for b.Loop() {
		t0 := time.Now()
		resp, err := http.Get(a.URL())
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(err, resp.StatusCode)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		s = append(s, time.Since(t0))
	}
	report(b, "page", s)
}

// BenchmarkAssertionToDecision: an assertion posted to the server (as the
// page's fetch does once the authenticator answered) until the verified
// decision arrives, counter written to the trust store (fsync) included.
func BenchmarkAssertionToDecision(b *testing.B) {
	h := newHarness(b, false)
	k := softkey.NewWebAuthn()
	h.enroll(k)
	var s []time.Duration
	counter := uint32(0)
	for b.Loop() {
		b.StopTimer()
		d := newDigest(b)
		a, _ := h.srv.Approve(request(d))
		counter++
		body := k.Assertion(h.srv.Origin(), RPID, d[:], userHandle, up, counter)
		b.StartTimer()
		t0 := time.Now()
		if code, resp := post(b, a, "assert", h.srv.Origin(), body); code != 200 {
			b.Fatal(code, resp)
		}
		if got := <-a.Decided(); got.Outcome != Approved {
			b.Fatal(got)
		}
		s = append(s, time.Since(t0))
	}
	report(b, "decision", s)
}
