package childproc

import (
	"encoding/binary"
	"os"
	"runtime"
	"testing"
)

// kern.procargs2 as macOS lays it out: argc, the executable's path, NUL
// padding, the arguments, then the environment, which is not read.
func TestParseProcargs2(t *testing.T) {
	b := binary.NativeEndian.AppendUint32(nil, 2)
	b = append(b, "/usr/bin/python3\x00\x00\x00\x00python3\x00srv.py\x00HOME=/x\x00"...)
	exe, args, ok := parseProcargs2(b)
	if !ok || exe != "/usr/bin/python3" || args != "python3\x00srv.py" {
		t.Errorf("parseProcargs2 = %q, %q, %v", exe, args, ok)
	}
	for _, bad := range [][]byte{nil, {1, 0}, binary.NativeEndian.AppendUint32(nil, 3), append(binary.NativeEndian.AppendUint32(nil, 3), "/x\x00a\x00"...)} {
		if _, _, ok := parseProcargs2(bad); ok {
			t.Errorf("parseProcargs2(%q) accepted a buffer of another shape", bad)
		}
	}
}

// ReadImage of a running process reads the same image twice; where the
// platform gives none it says so.
func TestReadImageStable(t *testing.T) {
	a, err := ReadImage(os.Getpid())
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		if err != ErrNoImage {
			t.Fatalf("ReadImage on %s: %v, want ErrNoImage", runtime.GOOS, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadImage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := ImageChange(a, b); d != "" {
		t.Errorf("two reads of one process image differ: %s", d)
	}
	if runtime.GOOS == "linux" && (a.ino == 0 || a.args == "" || !a.hasAuxv) {
		t.Errorf("image %+v: want the executable's inode, the command line and the auxiliary vector", a)
	}
}

// BenchmarkReadImage measures what the check of a granted call's process
// image costs (image.go): one read of the image and its comparison.
func BenchmarkReadImage(b *testing.B) {
	pid := os.Getpid()
	was, err := ReadImage(pid)
	if err != nil {
		b.Skip(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		now, err := ReadImage(pid)
		if err != nil || ImageChange(was, now) != "" {
			b.Fatal(err, ImageChange(was, now))
		}
	}
}
