package devloop

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/testenv"
)

// Editors' files beside a source are not changes: sed -i's sedXXXXXX and
// vim's 4913 probe and FILE~ backup, created and gone within the save, and
// a swap file and an Emacs lock left beside the file. Only the saved
// source is listed as changed, and a file an editor leaves alone starts
// no build.
func TestEditorFilesNotChanged(t *testing.T) {
	t.Parallel()
	sed, err := exec.LookPath("sed")
	if err != nil {
		testenv.Missing(t, "sed is not on PATH")
	}
	h := start(t, "make", "v0\n")
	h.waitFor("the first build", recorded("0:v0"))

	args := []string{"-i", "s/v0/v1/", "src/a.txt"}
	if runtime.GOOS == "darwin" {
		args = []string{"-i", "", "s/v0/v1/", "src/a.txt"}
	}
	cmd := exec.Command(sed, args...)
	cmd.Dir = h.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sed: %v\n%s", err, out)
	}
	h.waitFor("a build of sed's save", recorded("0:v1"))

	// vim's save with writebackup: the probe, the backup, the write in
	// place, the backup removed; its swap file and an Emacs lock stay.
	src := filepath.Join(h.dir, "src")
	h.write("src/.a.txt.swp", "swap\n")
	if err := os.Symlink("user@host.1234", filepath.Join(src, ".#a.txt")); err != nil {
		t.Fatal(err)
	}
	h.write("src/4913", "")
	if err := os.Remove(filepath.Join(src, "4913")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(src, "a.txt"), filepath.Join(src, "a.txt~")); err != nil {
		t.Fatal(err)
	}
	h.write("src/a.txt", "v2\n")
	if err := os.Remove(filepath.Join(src, "a.txt~")); err != nil {
		t.Fatal(err)
	}
	h.waitFor("a build of vim's save", recorded("0:v2"))
	records := h.settle(500 * time.Millisecond)

	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e.Type == "changed" && !slices.Equal(e.Paths, []string{"src/a.txt"}) {
			t.Errorf("changed %q, want only src/a.txt: events %s", e.Paths, eventTypes(h.events))
		}
	}
	if len(records) != 3 {
		t.Errorf("records %q: want the first build and one per save", records)
	}
}
