package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// ProfileEnv names the file a host writes a CPU profile of its whole run
// to (pprof format, read with go tool pprof), when set; it is for
// measuring the host (scripts/bench.sh profile, docs/performance.md),
// never needed to run it.
const ProfileEnv = "MCPEPOCH_CPUPROFILE"

// startProfile starts the CPU profile ProfileEnv asks for and returns
// what ends it and writes the file; a profile that cannot start is told
// on errw, and the host runs without.
func startProfile(errw io.Writer) (stop func()) {
	path := os.Getenv(ProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(errw, "mcpepoch host: warning: %s=%s: no CPU profile: %v\n", ProfileEnv, path, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
