package build

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// shells run their "-c" argument as a command line.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true}

// maxWrapperDepth bounds how many scripts resolveCommand looks through.
const maxWrapperDepth = 4

// resolveCommand follows the launch command through the scripts that stand
// between it and the code that runs (seed: "an identity that ignores
// dispatch only proves that the wrong program stayed the same"):
//
//   - an executable script (#!) is a wrapper: it is hashed, and its
//     interpreter, found the way the kernel and env(1) find it, becomes the
//     runtime; "#!/usr/bin/env node" resolves node on the server's PATH;
//   - "sh -c 'CMD ARGS'" (bash, dash, zsh, ksh) resolves CMD ARGS in turn,
//     after a leading "exec"; the shell is a wrapper;
//   - "npx NAME" resolves node_modules/.bin/NAME in the working directory
//     as the entry; npx itself, a node script, is a wrapper.
//
// It returns the runtime binary, the entry when one was found, and the
// wrappers in launch order. What a script does beyond its first line is not
// parsed; on Linux the host also reads /proc/<pid>/exe after launch to see
// what really runs.
func resolveCommand(command []string, dir, path string, id *Identity) (runtime, entry string, wrappers []string, err error) {
	exe, err := lookPath(command[0], dir, path)
	if err != nil {
		return "", "", nil, err
	}
	args := command[1:]
	if base := filepath.Base(command[0]); base == "npx" && len(args) > 0 {
		for _, a := range args {
			if strings.HasPrefix(a, "-") {
				continue
			}
			bin := filepath.Join(dir, "node_modules", ".bin", a)
			if real, err := filepath.EvalSymlinks(bin); err == nil && isRegular(real) {
				entry = real
				id.Inferred = append(id.Inferred, "entry "+display(dir, real)+": npx "+a+" runs node_modules/.bin/"+a)
			}
			break
		}
	}
	for depth := 0; depth < maxWrapperDepth; depth++ {
		base := filepath.Base(exe)
		if shells[base] && len(args) >= 2 && args[0] == "-c" {
			inner := strings.Fields(args[1])
			if len(inner) > 0 && inner[0] == "exec" {
				inner = inner[1:]
			}
			if len(inner) == 0 {
				break
			}
			wrappers = append(wrappers, exe)
			id.Inferred = append(id.Inferred, base+" -c runs "+strings.Join(inner, " "))
			next, err := lookPath(inner[0], dir, path)
			if err != nil {
				return "", "", nil, err
			}
			if entry == "" {
				for _, a := range inner[1:] {
					if isRegular(abs(dir, a)) {
						entry = a
						id.Inferred = append(id.Inferred, "entry "+a+": first argument of the -c command naming a file")
						break
					}
				}
			}
			exe, args = next, inner[1:]
			continue
		}
		interp, iargs, ok := shebang(exe)
		if !ok {
			break
		}
		wrappers = append(wrappers, exe)
		if filepath.Base(interp) == "env" {
			name := ""
			for _, a := range iargs {
				if strings.HasPrefix(a, "-") || strings.Contains(a, "=") {
					continue
				}
				name = a
				break
			}
			if name == "" {
				break
			}
			id.Inferred = append(id.Inferred, display(dir, exe)+" starts with #!"+interp+" "+strings.Join(iargs, " ")+": "+name+" resolved on PATH")
			interp = name
		} else {
			id.Inferred = append(id.Inferred, display(dir, exe)+" starts with #!"+interp)
		}
		next, err := lookPath(interp, dir, path)
		if err != nil {
			return "", "", nil, err
		}
		if entry == "" {
			entry = exe // the script is the entry of its interpreter
		}
		exe, args = next, nil
	}
	return exe, entry, wrappers, nil
}

// shebang reads the "#!" line of an executable script.
func shebang(p string) (interp string, args []string, ok bool) {
	f, err := os.Open(p)
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadSlice('\n')
	if err != nil && len(line) == 0 {
		return "", nil, false
	}
	if !bytes.HasPrefix(line, []byte("#!")) {
		return "", nil, false
	}
	fields := strings.Fields(string(line[2:]))
	if len(fields) == 0 {
		return "", nil, false
	}
	return fields[0], fields[1:], true
}
