package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpepoch/mcpepoch/checkup"
	"github.com/mcpepoch/mcpepoch/internal/cli"
)

// runDoctor prints one line per problem with the project's wiring, each
// with its fix, and exits 1 when there is any.
func runDoctor(_ context.Context, args []string, stdio Stdio) error {
	fs := newFlags("doctor", stdio.Err, "[--dir DIR]")
	dirFlag := fs.String("dir", ".", "project root")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError("doctor takes no arguments, got %q", fs.Args())
	}
	root, err := projectRoot(*dirFlag)
	if err != nil {
		return err
	}
	ucd, _ := os.UserConfigDir()
	o := checkup.Options{UserConfigDir: ucd, Version: cli.BuildVersion().Line()}
	if exe, err := self(); err == nil {
		o.Self = exe
	}
	rep, err := checkup.Check(root, o)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	rep.Problems = append(rep.Problems, policyProblems(root)...)
	p := newPainter(stdio.Out)
	for _, pr := range rep.Problems {
		fmt.Fprintf(stdio.Out, "%s: %s; %s\n", printableText(pr.Where), printableText(pr.What), p.ok("fix: "+printableText(pr.Fix)))
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(stdio.Out, "note: %s\n", printableText(n))
	}
	if len(rep.Problems) > 0 {
		n := fmt.Sprintf("%d problems", len(rep.Problems))
		if len(rep.Problems) == 1 {
			n = "1 problem"
		}
		fmt.Fprintf(stdio.Err, "%s\n", p.bad(n))
		return silentExit(exitFailure)
	}
	fmt.Fprintln(stdio.Err, "no problems found")
	return nil
}
