package main

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// version returns the module version mcpepoch was built from, or "devel".
func version() string {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return "mcpepoch " + v
}

func errorf(format string, args ...any) error {
	if len(args) == 0 {
		return errors.New(format)
	}
	return fmt.Errorf(format, args...)
}
