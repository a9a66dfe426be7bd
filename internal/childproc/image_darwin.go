package childproc

import "golang.org/x/sys/unix"

// ReadImage reads what macOS gives of the process image of pid
// (image.go): the executable's path and the arguments the kernel keeps
// (sysctl kern.procargs2). There is no inode of the running image and no
// auxiliary vector: an exec of the same program with the same arguments
// is not seen.
func ReadImage(pid int) (Image, error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return Image{}, err
	}
	exe, args, ok := parseProcargs2(b)
	if !ok {
		return Image{}, ErrNoImage
	}
	return Image{exe: exe, args: args}, nil
}
