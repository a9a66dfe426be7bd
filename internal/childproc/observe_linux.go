package childproc

import (
	"crypto/sha256"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/build"
	"github.com/mcpepoch/mcpepoch/localapi"
)

// Observe reads /proc/<pid>: the executable image (hashed through
// /proc/<pid>/exe, which works even when the file was deleted), the command
// line and the working directory. withDigest=false skips the hash.
func Observe(pid int, withDigest bool) *localapi.Observed {
	p := "/proc/" + strconv.Itoa(pid)
	exe, err := os.Readlink(p + "/exe")
	if err != nil {
		return nil
	}
	o := &localapi.Observed{Exe: exe, At: time.Now()}
	if strings.HasSuffix(exe, " (deleted)") {
		o.ExeDeleted = true
	}
	if withDigest {
		if f, err := os.Open(p + "/exe"); err == nil {
			h := sha256.New()
			if _, err := io.Copy(h, f); err == nil {
				o.ExeDigest = build.NewDigest(h)
			}
			f.Close()
		}
	}
	if b, err := os.ReadFile(p + "/cmdline"); err == nil {
		o.Cmdline = strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	o.Cwd, _ = os.Readlink(p + "/cwd")
	return o
}
