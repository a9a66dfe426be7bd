//go:build linux

// Command durableproxy is the least a stdio middle process that keeps
// mcpepoch's audit promise can cost: it starts COMMAND, and for every
// message (one line) in either direction it appends one record of about
// 300 bytes to a log with one write(2) before it forwards the line with
// one write(2); a goroutine of its own makes the log durable with
// fdatasync at most once a millisecond, off the call path, as the host's
// audit writer groups its syncs. It reads nothing of a message but its
// end and its SHA-256. It is the anchor the host's small-call cost is
// measured against (scripts/bench.sh); the splice proxy is the bare
// floor beside it.
//
// Usage: durableproxy LOG COMMAND [ARG...]   (Linux, as scripts/bench.sh)
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: durableproxy LOG COMMAND [ARG...]")
		os.Exit(2)
	}
	log, err := os.OpenFile(os.Args[1], os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	must(err)
	inR, inW, err := os.Pipe()
	must(err)
	outR, outW, err := os.Pipe()
	must(err)
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	must(cmd.Start())
	inR.Close()
	outW.Close()
	for _, f := range []*os.File{inW, outR, os.Stdin, os.Stdout} {
		unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	}
	l := &recordLog{f: log, dirty: make(chan struct{}, 1)}
	go l.syncer()
	go func() {
		relay(l, "request", inW, os.Stdin)
		inW.Close()
	}()
	relay(l, "response", os.Stdout, outR)
	cmd.Wait()
}

// recordLog appends records; seq orders them.
type recordLog struct {
	f     *os.File
	seq   atomic.Int64
	dirty chan struct{}
	mu    sync.Mutex // one record's write at a time, as one writer would
}

// record appends one record of line, with one write(2).
func (l *recordLog) record(dir string, line []byte) {
	sum := sha256.Sum256(line)
	seq := l.seq.Add(1)
	b := make([]byte, 0, 320)
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"type":"`...)
	b = append(b, dir...)
	b = append(b, `","run":"01JBENCHRUN0000000000000000","epoch":"01JBENCHEP00000000000000000`...)
	b = append(b, `","time":"`...)
	b = time.Now().UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","bytes":`...)
	b = strconv.AppendInt(b, int64(len(line)), 10)
	b = append(b, `,"message":"sha256:`...)
	b = hex.AppendEncode(b, sum[:])
	b = append(b, `","prev":"sha256:`...)
	b = append(b, "0000000000000000000000000000000000000000000000000000000000000000"...)
	b = append(b, "\"}\n"...)
	l.mu.Lock()
	l.f.Write(b)
	l.mu.Unlock()
	select {
	case l.dirty <- struct{}{}:
	default:
	}
}

// syncer makes what was written durable, at most once a millisecond.
func (l *recordLog) syncer() {
	for range l.dirty {
		unix.Fdatasync(int(l.f.Fd()))
		time.Sleep(time.Millisecond)
	}
}

// relay forwards src's lines to dst, each after its record.
func relay(l *recordLog, dir string, dst io.Writer, src io.Reader) {
	r := bufio.NewReaderSize(src, 1<<20)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long message: read it whole, then record and forward it.
			buf := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = r.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if len(line) > 0 {
			l.record(dir, line)
			if _, werr := dst.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "durableproxy:", err)
		os.Exit(1)
	}
}
