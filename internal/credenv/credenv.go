// Package credenv takes the variables of env credential sources
// ([credentials.NAME] env = "VAR" in mcpepoch.toml) out of the host's own
// environment, where any process of the same user could read them for the
// host's whole life (/proc/PID/environ on Linux, ps eww on macOS, both the
// environment the process was started with, which changing os.Environ does
// not touch).
//
// A process's initial environment cannot be changed once it runs, so the
// host starts itself again: [Withhold] execs the same program, with the
// same arguments, pid and file descriptors, without those variables, and
// hands their values to the new image over a pipe whose read end it names
// in EnvFD; [Received] reads them there, once, and forgets the variable.
// The values then live only in the host's memory.
//
// The pipe is written whole before the exec, so it must hold the values:
// at most MaxValues bytes, and no more than the pipe's buffer (64 KiB on
// Linux; 16 KiB on macOS), or Withhold fails and nothing is started again.
package credenv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// EnvFD names, in the environment of the program started again, the file
// descriptor of the pipe that holds the values.
const EnvFD = "MCPEPOCH_CREDENV_FD"

// MaxValues bounds the values handed over, encoded, in bytes.
const MaxValues = 16 << 10

// readTimeout bounds the read of the pipe: its writer closed it before the
// exec, so a read that waits is reading something else.
const readTimeout = 2 * time.Second

// Held reports which of names the process's environment holds.
func Held(names []string) []string {
	var out []string
	for _, n := range names {
		if _, ok := os.LookupEnv(n); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Withhold starts the running program again in place (execve, same pid,
// same arguments and open descriptors) with an environment without names
// and without EnvFD, and hands the values of names it held, together with
// carried (values an earlier start handed over, [Received]), to the new
// image over a pipe named in EnvFD. It returns only when that cannot be
// done; nothing has been started then, and the error says why. With none
// of names in the environment it returns nil at once.
func Withhold(names []string, carried map[string]string) error {
	held := Held(names)
	if len(held) == 0 {
		return nil
	}
	values := map[string]string{}
	for k, v := range carried {
		values[k] = v
	}
	for _, n := range held {
		values[n], _ = os.LookupEnv(n)
	}
	b, err := json.Marshal(values)
	if err != nil {
		return err
	}
	if len(b) > MaxValues {
		return fmt.Errorf("the variables %s hold %d bytes, more than the %d a host takes out of its environment: keep the secret in a file or command source instead", strings.Join(held, ", "), len(b), MaxValues)
	}
	self, err := executable()
	if err != nil {
		return fmt.Errorf("cannot start the host again without %s: %w", strings.Join(held, ", "), err)
	}
	// The write end must reach no child a goroutine may be starting
	// meanwhile (the lock os/exec holds while it forks).
	var p [2]int
	syscall.ForkLock.RLock()
	err = syscall.Pipe(p[:])
	if err == nil {
		syscall.CloseOnExec(p[0])
		syscall.CloseOnExec(p[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return fmt.Errorf("cannot start the host again without %s: pipe: %w", strings.Join(held, ", "), err)
	}
	r, w := p[0], p[1]
	if err := writeAll(w, b); err != nil {
		syscall.Close(r)
		syscall.Close(w)
		return fmt.Errorf("cannot hand %s to the host started again: %w; keep the secret in a file or command source instead", strings.Join(held, ", "), err)
	}
	syscall.Close(w)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == EnvFD || slices.Contains(held, k)
	})
	env = append(env, EnvFD+"="+strconv.Itoa(r))
	// Only the new image gets the read end: it is made inheritable just
	// before the exec, with no child started meanwhile.
	syscall.ForkLock.Lock()
	if _, err = unix.FcntlInt(uintptr(r), unix.F_SETFD, 0); err == nil {
		err = syscall.Exec(self, os.Args, env)
	}
	syscall.ForkLock.Unlock()
	syscall.Close(r)
	return fmt.Errorf("cannot start the host again without %s: exec %s: %w", strings.Join(held, ", "), self, err)
}

// writeAll writes b to the pipe w without blocking: the pipe's buffer
// must hold it, since nothing reads it before the exec.
func writeAll(w int, b []byte) error {
	if err := syscall.SetNonblock(w, true); err != nil {
		return err
	}
	for len(b) > 0 {
		n, err := syscall.Write(w, b)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if errors.Is(err, syscall.EAGAIN) {
			return fmt.Errorf("%d bytes do not fit the pipe's buffer", len(b))
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// executable is the file to exec: on Linux the very file running
// (/proc/self/exe, even if its path was replaced since), elsewhere its
// path.
func executable() (string, error) {
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/proc/self/exe"); err == nil {
			return "/proc/self/exe", nil
		}
	}
	return os.Executable()
}

// Received returns the values an earlier start of this program handed
// over (Withhold), reading the pipe EnvFD names once and closing it, and
// removes EnvFD from the environment so that no child inherits it. nil,
// and no error, when EnvFD is unset. A descriptor that is not a pipe, or
// that does not hold one JSON object of strings, is an error.
func Received() (map[string]string, error) {
	s, ok := os.LookupEnv(EnvFD)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(EnvFD)
	fd, err := strconv.Atoi(s)
	if err != nil || fd < 3 {
		return nil, fmt.Errorf("%s=%q: not the descriptor of a pipe this program opened (the variable is mcpepoch host's own: remove it from the environment it is started with)", EnvFD, s)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil, fmt.Errorf("%s=%d: not a pipe (the variable is mcpepoch host's own: remove it from the environment it is started with)", EnvFD, fd)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("%s=%d: %w", EnvFD, fd, err)
	}
	f := os.NewFile(uintptr(fd), "credentials pipe")
	defer f.Close()
	f.SetReadDeadline(time.Now().Add(readTimeout))
	b, err := io.ReadAll(io.LimitReader(f, MaxValues+1))
	if err != nil {
		return nil, fmt.Errorf("%s=%d: %w", EnvFD, fd, err)
	}
	if len(b) > MaxValues {
		return nil, fmt.Errorf("%s=%d: more than %d bytes", EnvFD, fd, MaxValues)
	}
	var values map[string]string
	if err := json.Unmarshal(b, &values); err != nil {
		return nil, fmt.Errorf("%s=%d: not the values this program handed over", EnvFD, fd)
	}
	return values, nil
}

// Environ returns values as NAME=value entries, sorted, for a reader of
// os.Environ's form.
func Environ(values map[string]string) []string {
	out := make([]string, 0, len(values))
	for k, v := range values {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
