//go:build !linux && !darwin

package tty

import "os"

func cbreak(*os.File) (func(), error) { return nil, ErrUnsupported }
