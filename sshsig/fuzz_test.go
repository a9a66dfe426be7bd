package sshsig

import (
	"testing"

	"github.com/mcpepoch/mcpepoch/internal/softkey"
)

// FuzzParse: no input makes Parse or Verify panic or hang.
func FuzzParse(f *testing.F) {
	k := softkey.NewSSHEd25519()
	f.Add(k.SSHSIG(GrantNamespace, []byte("m"), up, 1))
	f.Add(softkey.NewSSHECDSA().SSHSIG(GrantNamespace, []byte("m"), 0, 0))
	f.Add([]byte("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(b)
		if err != nil {
			return
		}
		s.Verify([]byte("m"), GrantNamespace)
	})
}
