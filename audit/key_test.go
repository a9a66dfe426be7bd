package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestLoadKeyCreatesOnce: the first LoadKey creates the key file, mode
// 0600; concurrent and later loads get the same key.
func TestLoadKeyCreatesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "digest.key")
	keys := make([]Key, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadKey(path)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi, err)
	}
	for _, k := range keys[1:] {
		if k.Digest([]byte("x")) != keys[0].Digest([]byte("x")) {
			t.Fatal("two loads gave different keys")
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the key only", len(ents))
	}
}

// TestArgsDigestKeyed: a keyed digest of a 4-digit PIN cannot be found by
// trying the 10,000 PINs without the key, as the unkeyed one can.
func TestArgsDigestKeyed(t *testing.T) {
	k, err := LoadKey(filepath.Join(t.TempDir(), "digest.key"))
	if err != nil {
		t.Fatal(err)
	}
	secret := json.RawMessage(`{"pin": "4821"}`)
	keyed, unkeyed := k.ArgsDigest(secret), ArgsDigest(secret)
	if !strings.HasPrefix(keyed, KeyedPrefix) || len(keyed) != len(KeyedPrefix)+64 {
		t.Fatalf("keyed digest %q", keyed)
	}
	if k.ArgsDigest(json.RawMessage(`{ "pin":"4821" }`)) != keyed {
		t.Error("equal arguments, different spacing: different digests")
	}
	found := ""
	for pin := range 10000 {
		args := fmt.Sprintf(`{"pin":"%04d"}`, pin)
		sum := sha256.Sum256([]byte(args))
		if d := "sha256:" + hex.EncodeToString(sum[:]); d == unkeyed {
			found = args
		}
		if d := "hmac-sha256:" + hex.EncodeToString(sum[:]); d == keyed {
			t.Fatalf("keyed digest is the bare hash of %s", args)
		}
	}
	if found == "" {
		t.Fatal("the unkeyed digest was not found by trying PINs: the test proves nothing")
	}
	other, _ := LoadKey(filepath.Join(t.TempDir(), "digest.key"))
	if other.ArgsDigest(secret) == keyed {
		t.Error("two projects' keys give the same digest")
	}
}

// TestLoadKeyRefuses: a key others can read, a symlink, or a file that
// does not hold a key is an error naming the file.
func TestLoadKeyRefuses(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.key")
	if _, err := LoadKey(good); err != nil {
		t.Fatal(err)
	}
	loose := filepath.Join(dir, "loose.key")
	b, _ := os.ReadFile(good)
	os.WriteFile(loose, b, 0o644)
	link := filepath.Join(dir, "link.key")
	os.Symlink(good, link)
	short := filepath.Join(dir, "short.key")
	os.WriteFile(short, []byte("abcd\n"), 0o600)
	for _, p := range []string{loose, link, short} {
		if _, err := LoadKey(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("LoadKey(%s): %v, want an error naming it", filepath.Base(p), err)
		}
	}
}

// TestArgsDigestReusedBuffers: a Key that digests one call's arguments
// after another (its canonical form written into buffers it keeps) gives
// each the digest of the reference canonical form (jcs.Transform), a
// shorter after a longer, sorted and unsorted, nested, too large for the
// kept buffers, and forms the fast path leaves to jcs.
func TestArgsDigestReusedBuffers(t *testing.T) {
	k, err := LoadKey(filepath.Join(t.TempDir(), "digest.key"))
	if err != nil {
		t.Fatal(err)
	}
	ref := Key{k: k.k} // no reused state: hmac.New each time
	big := `{"z":"` + strings.Repeat("y", 70<<10) + `","a":1}`
	args := []string{
		`{"path":"README.md","limit":10}`,
		`{"b":{"d":[1,2,{"f":true,"e":null}],"c":"x"},"a":"é"}`,
		`{"a":1}`,
		big,
		`{"limit":10,"path":"README.md"}`,
		`{"n":1.50,"m":"\u00e9"}`,
		` `,
		`{"zz":1,"z":2,"é":3,"e":4}`,
		big,
		`[3,2,1]`,
		`{"x":1}`,
	}
	for round := range 2 {
		for i, a := range args {
			want := ref.Digest(jcsOrSelf([]byte(a)))
			if got := k.ArgsDigest(json.RawMessage(a)); got != want {
				t.Errorf("round %d, arguments %d (%.40s): digest %s, want %s", round, i, a, got, want)
			}
		}
	}
}

// jcsOrSelf is the canonical form ArgsDigest digests, by the reference
// path alone: jcs.Transform, {} for nothing, the bytes for invalid JSON.
func jcsOrSelf(b []byte) []byte {
	b = []byte(strings.TrimSpace(string(b)))
	if len(b) == 0 {
		return []byte("{}")
	}
	if c, err := jcs.Transform(b); err == nil {
		return c
	}
	return b
}
