//go:build !linux

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "durableproxy: Linux only, as scripts/bench.sh")
	os.Exit(2)
}
