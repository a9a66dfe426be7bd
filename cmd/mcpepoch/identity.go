package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/config"
	"github.com/mcpepoch/mcpepoch/internal/cli"
)

// runIdentity explains, for a launch command, every input hashed into its
// identity, why, and the digest: what a user runs to see why the host
// restarted, or did not.
func runIdentity(ctx context.Context, args []string, stdio Stdio) error {
	fs := newFlags("identity", stdio.Err, "[--json] [--dir DIR] [-- CMD ARGS...]")
	dirFlag := fs.String("dir", ".", "project root: the server's working directory")
	asJSON := fs.Bool("json", false, "print the identity as JSON on stdout")
	rehash := fs.Bool("rehash", false, "with --cached: read every file and rewrite the caches")
	cached := fs.Bool("cached", false, "reuse digests of unchanged files from the hook's stat caches in .mcpepoch/cache/ "+
		"(faster; any process of your user can write them, and the host never reads them)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var flags config.Flags
	if fs.NArg() > 0 {
		flags.Command = fs.Args()
	}
	set, err := resolveProject(*dirFlag, flags)
	if err != nil {
		return err
	}
	// The identity settings the policy floor puts in force, as a host has.
	spec := cli.IdentityInForce(set, false)
	spec.Rehash = *rehash
	if !*cached {
		// What the host computes: every file read, no cache read or
		// written (the host keeps its own caches in memory).
		spec.CacheDir = ""
	}
	if len(spec.Command) == 0 && spec.Entry == "" {
		return usageError("no launch command: give one after --, or set command in mcpepoch.toml")
	}
	// Hashing a huge tree, or a lockfile that is a FIFO, gives way to
	// SIGINT or SIGTERM.
	id, err := interruptible(ctx, "hashing", func() (*build.Identity, error) { return build.Compute(spec) }, nil)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdio.Out, id)
	}
	printIdentity(stdio.Out, id)
	return nil
}

// printIdentity writes id to w as the text report of mcpepoch identity:
// the launch command, each artifact with its digest and details, the Go
// build information, native addons and how each input was found.
func printIdentity(w io.Writer, id *build.Identity) {
	fmt.Fprintf(w, "launch command: %s\nworking directory: %s\n", strings.Join(id.Command, " "), id.Dir)
	if id.Source != "" {
		fmt.Fprintf(w, "runs from source: %s\n", id.Source)
	}
	fmt.Fprintln(w)
	for _, a := range id.Artifacts() {
		d := string(a.Digest)
		if a.Missing {
			d = "(absent)"
		}
		name := a.Path
		if a.Role == build.RoleEnv {
			name = "$" + name
		}
		fmt.Fprintf(w, "%-9s %s\n          %s\n", a.Role, name, d)
		var extra []string
		if a.Version != "" {
			extra = append(extra, "version "+a.Version)
		}
		if a.Role == build.RoleDeps || a.Role == build.RoleCode && a.Files > 0 {
			extra = append(extra, fmt.Sprintf("%d files, %d bytes, %d native addons", a.Files, a.Size, a.Native))
		} else if a.Role != build.RoleEnv && !a.Missing {
			extra = append(extra, fmt.Sprintf("%d bytes", a.Size))
		}
		if a.Why != "" {
			extra = append(extra, a.Why)
		}
		for _, e := range extra {
			fmt.Fprintf(w, "          %s\n", e)
		}
	}
	if g := id.Go; g != nil {
		fmt.Fprintf(w, "\nGo binary: %s, main %s %s", g.GoVersion, g.Path, g.Version)
		if g.VCS != "" {
			fmt.Fprintf(w, ", %s %s %s", g.VCS, g.Revision, g.Time)
			if g.Modified {
				fmt.Fprint(w, " (modified)")
			}
		}
		fmt.Fprintln(w)
	}
	if len(id.Native) > 0 {
		fmt.Fprintln(w, "\nnative addons:")
		for _, n := range id.Native {
			fmt.Fprintf(w, "  %s %s\n", n.Path, n.Digest)
		}
	}
	if len(id.Inferred) > 0 {
		fmt.Fprintln(w, "\nhow it was found:")
		for _, s := range id.Inferred {
			fmt.Fprintf(w, "  %s\n", s)
		}
	}
}
