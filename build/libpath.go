package build

import (
	"debug/elf"
	"path/filepath"
	"slices"
	"strings"
)

// maxNeededLibraries bounds the libraries libraryPathFiles follows.
const maxNeededLibraries = 256

// libraryPathFiles returns the shared libraries that the ELF files bins
// need (DT_NEEDED, and what those need in turn) and that the dynamic
// loader finds in an LD_LIBRARY_PATH directory: the code that variable
// redirects. A library found in no such directory comes from the system
// and is not redirected by it; one a program opens itself (dlopen, a
// Python extension module) is not known from its headers and is not
// listed. A bin that is not ELF (a script, a Mach-O binary) needs
// nothing here; a statically linked one (Go) needs nothing at all.
func libraryPathFiles(spec Spec, dir string, bins []string) []string {
	var search []string
	for _, d := range strings.FieldsFunc(lookupEnv(spec, "LD_LIBRARY_PATH"), func(r rune) bool { return r == ':' || r == ';' }) {
		search = append(search, abs(dir, d))
	}
	if len(search) == 0 {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	queue := slices.Clone(bins)
	for len(queue) > 0 && len(seen) < maxNeededLibraries {
		p := queue[0]
		queue = queue[1:]
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		for _, name := range neededLibraries(p) {
			if strings.Contains(name, "/") {
				continue // a path, not searched for
			}
			for _, d := range search {
				if c := filepath.Join(d, name); isRegular(c) {
					if !slices.Contains(out, c) {
						out = append(out, c)
						queue = append(queue, c)
					}
					break
				}
			}
		}
	}
	return out
}

// neededLibraries returns the DT_NEEDED entries of the ELF file p, nil
// when p is not one.
func neededLibraries(p string) []string {
	if !isRegular(p) {
		return nil
	}
	f, err := elf.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil
	}
	return libs
}

// runpathFiles returns the shared libraries that the ELF libraries libs
// (the preloaded ones) need (DT_NEEDED, and what those need in turn, at
// most maxNeededLibraries looked at) and that the loader finds through
// the needing library's own DT_RUNPATH, else DT_RPATH: $ORIGIN (or
// ${ORIGIN}) is the directory of that library as found, a relative
// directory is relative to dir (the server's working directory), and one
// with another token ($LIB, $PLATFORM) is skipped. As for
// LD_LIBRARY_PATH, the search is approximate: the loader's order
// (LD_LIBRARY_PATH before DT_RUNPATH, DT_RPATH of the loading objects)
// and its ld.so.cache are not modelled.
func runpathFiles(dir string, libs []string) []string {
	var out []string
	seen := map[string]bool{}
	queue := slices.Clone(libs)
	for len(queue) > 0 && len(seen) < maxNeededLibraries {
		p := queue[0]
		queue = queue[1:]
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		needed, search := neededAndSearch(dir, p)
		for _, name := range needed {
			if strings.Contains(name, "/") {
				continue
			}
			for _, d := range search {
				if c := filepath.Join(d, name); isRegular(c) {
					if !slices.Contains(out, c) && !slices.Contains(libs, c) {
						out = append(out, c)
						queue = append(queue, c)
					}
					break
				}
			}
		}
	}
	return out
}

// neededAndSearch returns the DT_NEEDED entries of the ELF file p and the
// directories of its DT_RUNPATH (else DT_RPATH), expanded as
// runpathFiles says; nil when p is not one.
func neededAndSearch(dir, p string) (needed, search []string) {
	if !isRegular(p) {
		return nil, nil
	}
	f, err := elf.Open(p)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	if needed, err = f.ImportedLibraries(); err != nil {
		return nil, nil
	}
	paths, _ := f.DynString(elf.DT_RUNPATH)
	if len(paths) == 0 {
		paths, _ = f.DynString(elf.DT_RPATH)
	}
	origin := filepath.Dir(p)
	for _, v := range paths {
		for _, d := range strings.Split(v, ":") {
			d = strings.ReplaceAll(strings.ReplaceAll(d, "${ORIGIN}", origin), "$ORIGIN", origin)
			if d == "" || strings.Contains(d, "$") {
				continue
			}
			search = append(search, abs(dir, d))
		}
	}
	return needed, search
}
