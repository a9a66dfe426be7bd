package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestEnrollPrivateKeyNamesThePublicOne: enroll --ssh given the private
// key says to pass KEY.pub, not a parser's error.
func TestEnrollPrivateKeyNamesThePublicOne(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "k")
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "id_ed25519_sk")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "enroll", "--ssh", key)
	if code != exitUsage || !strings.Contains(stderr, "this is a private key: pass the public key "+key+".pub") {
		t.Fatalf("enroll --ssh PRIVATE: exit %d\n%s", code, stderr)
	}
}
