package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// buildAll is step 1.
func (d *demo) buildAll(ctx context.Context) error {
	d.heading("1. Build mcpepoch and the example server (revision A)")
	d.out.line("", "module root %s", d.root)
	d.out.line("", "project     %s", d.proj)
	if err := d.goBuild(ctx, d.root, "-o", d.bin, "./cmd/mcpepoch"); err != nil {
		return err
	}
	if err := d.buildServer(ctx); err != nil {
		return err
	}
	// The demo approves with --yes, which proves no person: it counts only
	// where the proof list names same-user.
	toml := "label = \"" + label + "\"\ncommand = [\"./bin/inventory-server\"]\n\n[grants]\nproof = [\"same-user\"]  # approve --yes counts: no person is proven\n" +
		"\n[credentials.inventory-supplier]  # inventory_order signs with it; the host hands it to approved calls only\n" +
		"tools = [\"inventory_order\"]\nenv   = \"" + supplierVar + "\"\n"
	if err := os.WriteFile(filepath.Join(d.proj, "mcpepoch.toml"), []byte(toml), 0o644); err != nil {
		return d.fail("%v", err)
	}
	d.out.line("", "wrote project/mcpepoch.toml:")
	for _, l := range strings.Split(strings.TrimSpace(toml), "\n") {
		d.out.line("", "    %s", l)
	}
	return nil
}

// buildServer builds examples/inventory-go into the project's bin/ with extra
// go build flags.
func (d *demo) buildServer(ctx context.Context, flags ...string) error {
	args := append(slices.Clone(flags), "-o", filepath.Join(d.proj, "bin", "inventory-server"), ".")
	return d.goBuild(ctx, filepath.Join(d.root, "examples", "inventory-go"), args...)
}

// goBuild runs go build in dir, showing the command.
func (d *demo) goBuild(ctx context.Context, dir string, args ...string) error {
	args = append([]string{"build"}, args...)
	rel, _ := filepath.Rel(d.root, dir)
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = d.short(a)
		if strings.ContainsAny(a, " \"") {
			shown[i] = "'" + shown[i] + "'"
		}
	}
	if rel == "." {
		d.out.line("", "$ go %s", strings.Join(shown, " "))
	} else {
		d.out.line("", "$ (cd %s && go %s)", rel, strings.Join(shown, " "))
	}
	cmd := exec.CommandContext(ctx, d.goTool, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return d.fail("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return nil
}

// moduleRoot walks up from dir (the working directory when empty) to the
// directory whose go.mod declares modulePath.
func moduleRoot(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && declares(data, modulePath) {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("no go.mod for module %s in %s or above: run the demo from inside the mcpepoch repository", modulePath, dir)
		}
		d = parent
	}
}

// declares reports whether go.mod content gomod has the module line path.
func declares(gomod []byte, path string) bool {
	for _, l := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == path {
			return true
		}
	}
	return false
}
