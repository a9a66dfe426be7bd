package notify

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// halfLine is most of a request line, without its newline: what a peer that
// stops mid-line leaves the host holding.
var halfLine = []byte(`{"v":1,"type":"status","build":"` + strings.Repeat("x", MaxLine-64))

// holdHalfLines dials n connections to path and writes halfLine on each;
// it returns them open.
func holdHalfLines(t *testing.T, path string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	for range n {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
		// The host reads or refuses at once; a write it never reads
		// would block here on a full socket buffer.
		go c.Write(halfLine)
	}
	return conns
}

// A connection over MaxConns gets one busy error and is closed; once a
// connection ends, a new one is served again.
func TestMaxConns(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	l := serve(t, root, statusHandler)
	held := holdHalfLines(t, l.Path(), MaxConns)
	waitServing(t, l.Path())

	c, r := rawConn(t, l.Path())
	resp := readResponse(t, r)
	if resp.Type != TypeError || resp.Code != CodeBusy || !strings.Contains(resp.Error, fmt.Sprintf("%d connections", MaxConns)) {
		t.Fatalf("connection %d: %+v, want a %s error", MaxConns+1, resp, CodeBusy)
	}
	if _, err := r.ReadByte(); err != io.EOF {
		t.Errorf("after the busy response: %v, want EOF", err)
	}
	c.Close()

	held[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, r := rawConn(t, l.Path())
		resp := exchange(t, c, r, `{"v":1,"type":"status"}`)
		c.Close()
		if resp.Type == "status" {
			break
		}
		if resp.Code != CodeBusy || time.Now().After(deadline) {
			t.Fatalf("after a connection ended: %+v, want a status response", resp)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitServing waits until a new connection to path is refused as busy:
// every slot is taken.
func waitServing(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(200 * time.Millisecond))
		b, _ := bufio.NewReader(c).ReadBytes('\n')
		c.Close()
		if bytes.Contains(b, []byte(`"code":"busy"`)) {
			return
		}
	}
	t.Fatal("connections were never refused as busy")
}

// A hundred peers holding a megabyte half-line each do not make the host
// hold a hundred megabytes: what all connections buffer is bounded by
// MaxConns.
func TestHalfLinesBounded(t *testing.T) {
	root := newRoot(t)
	l := serve(t, root, statusHandler)
	before := heapInUse()
	holdHalfLines(t, l.Path(), 100)
	time.Sleep(time.Second) // let the host read what it will
	grown := heapInUse() - before
	// MaxConns (32) lines of at most 1 MiB, grown by append to at most
	// 2 MiB each, plus read buffers: under 80 MiB. Unbounded, it is over
	// 100 MiB.
	if limit := uint64(80 << 20); grown > limit {
		t.Errorf("heap grew by %d MiB with 100 half-line connections, want under %d MiB", grown>>20, limit>>20)
	}
	t.Logf("heap grew by %.1f MiB", float64(grown)/(1<<20))
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// A line begun and not finished ends its connection after lineTimeout.
func TestHalfLineTimesOut(t *testing.T) {
	if testing.Short() {
		t.Skip("waits lineTimeout (3s); skipped with -short")
	}
	t.Parallel() // it only waits: the other one waits alongside
	root := newRoot(t)
	l := serve(t, root, statusHandler)
	c, err := net.Dial("unix", l.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(`{"v":1,"type":`)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(lineTimeout + 10*time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read: %v, want EOF when the host gives up on the line", err)
	}
	if d := time.Since(start); d < lineTimeout-time.Second {
		t.Errorf("closed after %v, before lineTimeout %v", d, lineTimeout)
	}
}

// MaxConns connections that never send a byte are closed lineTimeout after
// their accept, so a build hook gets through afterwards instead of a busy
// error for as long as they stay connected.
func TestSilentConnsTimeOut(t *testing.T) {
	if testing.Short() {
		t.Skip("waits lineTimeout (3s); skipped with -short")
	}
	t.Parallel() // it only waits: the other one waits alongside
	root := newRoot(t)
	l := serve(t, root, statusHandler)
	var held []net.Conn
	for range MaxConns {
		c, err := net.Dial("unix", l.Path())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		held = append(held, c)
	}
	start := time.Now()
	held[0].SetReadDeadline(start.Add(lineTimeout + 10*time.Second))
	if _, err := held[0].Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("silent connection: %v, want EOF once the host gives up on it", err)
	}
	t.Logf("silent connection closed after %v", time.Since(start))
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, r := rawConn(t, l.Path())
		resp := exchange(t, c, r, `{"v":1,"type":"status"}`)
		c.Close()
		if resp.Type == "status" {
			break
		}
		if resp.Code != CodeBusy || time.Now().After(deadline) {
			t.Fatalf("after the silent connections timed out: %+v, want a status response", resp)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Sixteen idle peers, as many as a same-user process opens in a loop
// without effort, do not shut out a status request or a build signal: the
// cap is well above that.
func TestIdlePeersDoNotShutOutStatus(t *testing.T) {
	t.Parallel()
	root := newRoot(t)
	l := serve(t, root, statusHandler)
	for range 16 {
		c, err := net.Dial("unix", l.Path())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	c, r := rawConn(t, l.Path())
	defer c.Close()
	if resp := exchange(t, c, r, `{"v":1,"type":"status"}`); resp.Type != "status" {
		t.Fatalf("status behind 16 idle connections: %+v, want a status response", resp)
	}
}
