//go:build !linux && !darwin

package childproc

// ReadImage has nothing to read outside Linux and macOS: no image is
// recorded and none is checked (image.go).
func ReadImage(pid int) (Image, error) { return Image{}, ErrNoImage }
