package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLoadRefusesDeepNestingBeforeDecoding(t *testing.T) {
	n := 400000
	dir := write(t, "label = \"x\"\n\nenv = "+strings.Repeat("[", n)+strings.Repeat("]", n)+"\n")
	_, err := Load(dir)
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 3 || !strings.Contains(err.Error(), "nested more than 64 deep") {
		t.Fatalf("Load(400,000 nested arrays) = %v, want a nesting error on line 3", err)
	}
}

func TestNestingIgnoresStringsAndComments(t *testing.T) {
	deep := strings.Repeat("[", 100)
	src := "a = \"" + deep + "\\\"" + deep + "\"\n" +
		"b = '" + deep + "'\n" +
		"c = \"\"\"\n" + deep + "\"\"\"\"\n" +
		"d = '''" + deep + "\n'''\n" +
		"# " + deep + "\n" +
		"e = [[1], {x = [2]}]\n" +
		"f = " + strings.Repeat("[", MaxNesting) + strings.Repeat("]", MaxNesting) + "\n"
	if line, err := checkNesting([]byte(src)); err != nil {
		t.Fatalf("checkNesting = line %d: %v, want nothing counted inside strings or comments", line, err)
	}
	src += "g = " + strings.Repeat("{a=", MaxNesting+1) + "1" + strings.Repeat("}", MaxNesting+1) + "\n"
	if line, err := checkNesting([]byte(src)); err == nil || line != 10 {
		t.Fatalf("checkNesting(inline tables %d deep) = line %d, %v; want line 10", MaxNesting+1, line, err)
	}
}

func TestLoadRefusesCodeAtRootOrPseudoFS(t *testing.T) {
	for _, code := range []string{`"/"`, `"/proc"`, `"/dev/shm"`, `"../../../../../../../../../../.."`} {
		_, err := Load(write(t, "code = ["+code+"]\n"))
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != "code" {
			t.Errorf("code = [%s]: Load = %v, want an error naming code", code, err)
		}
	}
	if _, err := Load(write(t, "code = [\"src\", \"/usr/share/x\"]\n")); err != nil {
		t.Errorf("code = [src, /usr/share/x]: %v", err)
	}
}

// A code tree that contains the project root or the home directory is
// refused naming code and what it contains; the root itself, trees in it
// and trees beside it load (CodeOutside names the latter).
func TestLoadRefusesCodeContainingProjectOrHome(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home", "me")
	t.Setenv("HOME", home)
	dir := filepath.Join(home, "src", "proj")
	if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	for code, want := range map[string]string{
		`".."`:                                  "contains the project root",
		`"` + base + `"`:                        "contains the project root",
		`"lib/../../.."`:                        "contains the project root",
		`"` + home + `"`:                        "contains the project root",
		`"` + filepath.Join(base, "home") + `"`: "contains the project root",
	} {
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte("code = [\"lib\", "+code+"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(dir)
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != "code" || !strings.Contains(err.Error(), want) {
			t.Errorf("code = [lib, %s]: Load = %v, want an error naming code: %s", code, err, want)
		}
	}
	// The home directory, from a project outside it.
	other := filepath.Join(base, "srv", "proj")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, FileName), []byte("code = [\""+home+"\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(other); err == nil || !strings.Contains(err.Error(), "contains the home directory "+home) {
		t.Errorf("code = [$HOME] from outside it: Load = %v, want it refused", err)
	}
	shared := filepath.Join(home, "src", "shared")
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("code = [\".\", \"lib\", \"../shared\", \""+shared+"\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatalf("code = [., lib, ../shared, %s]: %v", shared, err)
	}
	if got := CodeOutside(dir, c.Code); !slices.Equal(got, []string{"../shared", shared}) {
		t.Errorf("CodeOutside = %q, want the two spellings of ../shared", got)
	}
}
