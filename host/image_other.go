//go:build !linux && !darwin

package host

// readImage has nothing to read outside Linux and macOS: no image is
// recorded and none is checked (image.go).
func readImage(pid int) (procImage, error) { return procImage{}, errNoImage }
