package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// ProfileEnv names the file a host writes a CPU profile of its whole run
// to (pprof format, read with go tool pprof), when set; beside it, the
// same name with ".mutex" and ".block" holds where goroutines waited for
// a lock and blocked (every wait sampled). It is for measuring the host
// (scripts/bench.sh profile, docs/performance.md), never needed to run
// it.
const ProfileEnv = "MCPEPOCH_CPUPROFILE"

// startProfile starts the profiles ProfileEnv asks for and returns what
// ends them and writes the files; a profile that cannot start is told on
// errw, and the host runs without.
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
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		for _, name := range []string{"mutex", "block"} {
			if w, err := os.Create(path + "." + name); err == nil {
				pprof.Lookup(name).WriteTo(w, 0)
				w.Close()
			}
		}
	}
}
