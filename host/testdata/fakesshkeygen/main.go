// Command fakesshkeygen stands in for ssh-keygen on PATH, as a program
// with no security key can: "ssh-keygen -Y sign -n NAMESPACE -f KEY FILE"
// writes FILE.sig, an SSHSIG with the user-presence flag set, by the
// software key whose hex ed25519 seed is in KEY, presented as an
// sk-ssh-ed25519 key. "fakesshkeygen gen KEY" writes a fresh seed to KEY
// and the public key to KEY.pub.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mcpepoch/mcpepoch/internal/softkey"
)

func main() {
	a := os.Args[1:]
	if len(a) == 2 && a[0] == "gen" {
		seed := make([]byte, 32)
		rand.Read(seed)
		k := softkey.SSHEd25519FromSeed(seed)
		must(os.WriteFile(a[1], []byte(hex.EncodeToString(seed)), 0o600))
		must(os.WriteFile(a[1]+".pub", k.AuthorizedKey("soft"), 0o644))
		return
	}
	if len(a) != 7 || a[0] != "-Y" || a[1] != "sign" || a[2] != "-n" || a[4] != "-f" {
		fmt.Fprintf(os.Stderr, "fakesshkeygen: unexpected arguments %q\n", a)
		os.Exit(2)
	}
	hexSeed, err := os.ReadFile(a[5])
	must(err)
	seed, err := hex.DecodeString(strings.TrimSpace(string(hexSeed)))
	must(err)
	msg, err := os.ReadFile(a[6])
	must(err)
	sig := softkey.SSHEd25519FromSeed(seed).SSHSIG(a[3], msg, softkey.FlagUserPresent, uint32(time.Now().Unix()))
	must(os.WriteFile(a[6]+".sig", sig, 0o600))
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakesshkeygen:", err)
		os.Exit(1)
	}
}
