package host

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
	in := pollableReader(r)
	f, ok := in.(*os.File)
	if !ok || f == r {
		t.Fatalf("pollableReader gave %T, not a descriptor of its own", in)
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
