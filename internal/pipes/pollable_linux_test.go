package pipes

import (
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// The client's stdin, a blocking pipe, is read through a descriptor of
// the host's own that waits in the runtime's poller: it reads what the
// client writes and its end, and the descriptor the host was given keeps
// its blocking mode, shared with whoever opened it.
func TestPollableReaderOwnsItsDescriptor(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fd := r.Fd() // blocking, as a client's pipe is
	in := PollableReader(r)
	f, ok := in.(*os.File)
	if !ok || f == r {
		t.Fatalf("PollableReader gave %T, not a descriptor of its own", in)
	}
	rc, _ := f.SyscallConn()
	rc.Control(func(own uintptr) {
		if fl, err := unix.FcntlInt(own, unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 {
			t.Errorf("the host's own descriptor is not non-blocking (flags %#x, %v)", fl, err)
		}
	})
	if fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("the descriptor given changed mode (flags %#x, %v)", fl, err)
	}
	go func() {
		w.Write([]byte("{\"id\":1}\n"))
		w.Close()
	}()
	got, err := io.ReadAll(in)
	if err != nil || string(got) != "{\"id\":1}\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	in.Close()
}

// The host's stdout, a blocking pipe the client reads, is written through
// a descriptor of the host's own, non-blocking: a line longer than the
// pipe holds is written as far as it goes and the write returns at once
// (the rest is the writer goroutine's, in the poller); the descriptor the
// host was given keeps its blocking mode, and what is written arrives.
func TestPollableWriterOwnsItsDescriptor(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd := w.Fd() // blocking, as a client's pipe is
	own := PollableWriter(w)
	if own == nil || own == w {
		t.Fatalf("PollableWriter gave %v, not a descriptor of its own", own)
	}
	defer own.Close()
	rc, _ := own.SyscallConn()
	rc.Control(func(ofd uintptr) {
		if fl, err := unix.FcntlInt(ofd, unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK == 0 || fl&unix.O_ACCMODE != unix.O_WRONLY {
			t.Errorf("the host's own descriptor is not non-blocking and write-only (flags %#x, %v)", fl, err)
		}
	})
	if fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("the descriptor given changed mode (flags %#x, %v)", fl, err)
	}
	size, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	try := TryWriterV(own, true)
	if try == nil {
		t.Fatal("no direct write for the host's own descriptor")
	}
	big := make([]byte, 2*size)
	n := try([][]byte{big}) // more than the pipe holds: must not block
	if n <= 0 || n >= len(big) {
		t.Fatalf("wrote %d of %d bytes into a pipe of %d", n, len(big), size)
	}
	got, err := io.ReadFull(r, make([]byte, n))
	if err != nil || got != n {
		t.Fatalf("read %d, %v", got, err)
	}
}
