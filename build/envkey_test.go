package build

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvDigestKeyed: with the project's digest key, an environment value
// is digested with HMAC-SHA-256, not the bare SHA-256 anyone can compute
// from a guess; without it, as before.
func TestEnvDigestKeyed(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{Dir: dir, Command: []string{"/bin/sh"}, EnvNames: []string{"APP_PIN"}, Environ: []string{"APP_PIN=4821"}}
	plain, err := Compute(spec)
	if err != nil {
		t.Fatal(err)
	}
	spec.EnvKeyFile = filepath.Join(dir, ".mcpepoch", "digest.key")
	keyed, err := Compute(spec)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Compute(spec)
	pd, kd := envDigestOf(t, plain, "APP_PIN"), envDigestOf(t, keyed, "APP_PIN")
	if pd != DigestBytes([]byte("4821")) {
		t.Errorf("unkeyed digest %s", pd)
	}
	if !strings.HasPrefix(string(kd), KeyedAlgorithm+":") || kd == pd || envDigestOf(t, again, "APP_PIN") != kd {
		t.Errorf("keyed digest %s (unkeyed %s): want a stable hmac-sha256 digest", kd, pd)
	}
	if _, err := ParseDigest(string(kd)); err != nil {
		t.Errorf("ParseDigest(%s): %v", kd, err)
	}
}

func envDigestOf(t *testing.T, id *Identity, name string) Digest {
	t.Helper()
	for _, a := range id.Env {
		if a.Path == name {
			return a.Digest
		}
	}
	t.Fatalf("no env artifact %s in %+v", name, id.Env)
	return ""
}
