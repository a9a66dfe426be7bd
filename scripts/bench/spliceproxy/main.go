// Command spliceproxy is the least a stdio middle process can cost: it
// starts COMMAND and moves bytes between its own stdio and the command's
// with splice(2), without reading them, over 1 MiB pipes (as mcpepoch
// host asks for). It is the baseline the benchmarks compare the host with.
//
// Usage: spliceproxy COMMAND [ARG...]
package main

import (
	"fmt"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: spliceproxy COMMAND [ARG...]")
		os.Exit(2)
	}
	inR, inW, err := os.Pipe()
	must(err)
	outR, outW, err := os.Pipe()
	must(err)
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
	must(cmd.Start())
	inR.Close()
	outW.Close()
	go func() {
		relay(inW, os.Stdin)
		inW.Close()
	}()
	relay(os.Stdout, outR)
	cmd.Wait()
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "spliceproxy:", err)
		os.Exit(1)
	}
}
