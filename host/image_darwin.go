package host

import "golang.org/x/sys/unix"

// readImage reads what macOS gives of the process image of pid
// (image.go): the executable's path and the arguments the kernel keeps
// (sysctl kern.procargs2). There is no inode of the running image and no
// auxiliary vector: an exec of the same program with the same arguments
// is not seen.
func readImage(pid int) (procImage, error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return procImage{}, err
	}
	exe, args, ok := parseProcargs2(b)
	if !ok {
		return procImage{}, errNoImage
	}
	return procImage{exe: exe, args: args}, nil
}
