package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"

	"github.com/mcpepoch/mcpepoch/internal/layout"
)

// short replaces the temporary directory in s with $TMP for display.
func (d *demo) short(s string) string {
	return strings.ReplaceAll(s, d.tmp, "$TMP")
}

// mcpepoch runs the mcpepoch CLI in the project with args, printing its
// stdout and stderr lines as they come under label, and returns them. A
// non-zero exit is an error.
func (d *demo) mcpepoch(ctx context.Context, label string, args ...string) ([]string, error) {
	d.out.line("", "$ mcpepoch %s", strings.Join(args, " "))
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, d.bin, args...)
	cmd.Dir = d.proj
	cmd.Env = d.env()
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, d.fail("mcpepoch %s: %v", args[0], err)
	}
	var lines []string
	sc := bufio.NewScanner(pr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		d.out.line(label, "%s", d.short(sc.Text()))
	}
	pr.Close()
	if err := cmd.Wait(); err != nil {
		return lines, d.fail("mcpepoch %s: %v", args[0], err)
	}
	return lines, nil
}

// record runs mcpepoch record: the build hook.
func (d *demo) record(ctx context.Context) ([]string, error) {
	return d.mcpepoch(ctx, "[hook]", "record")
}

// approve runs mcpepoch approve for every tool of the current catalog, as a
// person at a terminal would after reading the review; --yes stands in for
// their answer.
func (d *demo) approve(ctx context.Context) ([]string, error) {
	d.out.line("", "(a person reviews what runs and approves; --yes --all stands in for their answers)")
	lines, err := d.mcpepoch(ctx, "[approve]", "approve", "--yes", "--all")
	if err != nil {
		return lines, err
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "approved: grant ") {
			return lines, nil
		}
	}
	return lines, d.fail("mcpepoch approve printed no \"approved: grant …\" line")
}

// firstRecord is step 2.
func (d *demo) firstRecord(ctx context.Context) error {
	d.heading("2. Record the first build (no host is running yet)")
	lines, err := d.record(ctx)
	if err != nil {
		return err
	}
	if err := expectLine(lines, "build complete: first build recorded"); err != nil {
		return d.fail("%v", err)
	}
	if err := expectLine(lines, "no host reachable over the socket; hosts watching the manifest will see this build"); err != nil {
		return d.fail("%v", err)
	}
	m, err := os.ReadFile(layout.Manifest(d.proj))
	if err != nil {
		return d.fail("run manifest: %v", err)
	}
	d.out.line("", "project/.mcpepoch/manifest.toml:")
	for _, l := range strings.Split(strings.TrimRight(string(m), "\n"), "\n") {
		d.out.line("", "    %s", d.short(l))
	}
	return nil
}
