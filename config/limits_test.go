package config

import (
	"errors"
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
