package project_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpepoch/mcpepoch/project"
)

// TestTaskfileAliasBombRefused: a list aliased by many variables passes
// yaml's per-decoder alias check (go-task decodes each variable with a
// decoder of its own) and would expand to more nodes than memory holds;
// it is refused before decoding, naming the file. The one here expands to
// 1.5 million nodes (the bound is 1 million); the one that exhausted
// memory had 60,000 items aliased by 20,000 variables.
func TestTaskfileAliasBombRefused(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("version: '3'\nvars:\n  big: &big [" + strings.Repeat("x,", 1499) + "x]\n")
	for i := range 1000 {
		b.WriteString("  v" + strconv.Itoa(i) + ": *big\n")
	}
	b.WriteString("tasks:\n  build:\n    cmds: [go build ./...]\n")
	if err := os.WriteFile(filepath.Join(dir, "Taskfile.yml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := project.Read(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "Taskfile.yml")) || !strings.Contains(err.Error(), "aliases expanded") {
		t.Fatalf("project.Read: %v, want the Taskfile refused, named", err)
	}
}
