package childproc

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"syscall"
)

// ReadImage reads the process image of pid (image.go): the device and
// inode of /proc/PID/exe, its command line and the SHA-256 of its
// auxiliary vector. An auxv the process keeps from being read (it made
// itself undumpable) is left out; an exe or command line that cannot be
// read is an error.
func ReadImage(pid int) (Image, error) {
	p := "/proc/" + strconv.Itoa(pid)
	var st syscall.Stat_t
	if err := syscall.Stat(p+"/exe", &st); err != nil {
		return Image{}, err
	}
	var buf [4096]byte
	args, err := readSmall(p+"/cmdline", buf[:])
	if err != nil {
		return Image{}, err
	}
	im := Image{dev: uint64(st.Dev), ino: st.Ino, args: strings.TrimRight(string(args), "\x00")}
	if aux, err := readSmall(p+"/auxv", buf[:]); err == nil {
		im.auxv, im.hasAuxv = sha256.Sum256(aux), true
	}
	return im, nil
}

// readSmall reads the /proc file p into buf with one open, as many reads
// as it takes and one close: what fits in buf (a command line longer is
// cut there, which a comparison of two reads does not mind).
func readSmall(p string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	n := 0
	for n < len(buf) {
		k, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if k == 0 {
			break
		}
		n += k
	}
	return buf[:n], nil
}
