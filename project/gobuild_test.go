package project

import (
	"strings"
	"testing"
)

func TestGoBuildOutput(t *testing.T) {
	g := &GoMod{Module: "example.com/srv/v2"}
	for _, c := range []struct{ cmd, want string }{
		{"go build -o bin/nu5-go .", "bin/nu5-go"},
		{"go build -o=server ./cmd/srv", "server"},
		{"go build -ldflags '-s -w' -o 'bin/my srv' .", "bin/my srv"},
		{"go build -o bin/ ./cmd/tool", "bin/tool"},
		{"go build", "srv"},
		{"go build ./cmd/tool", "tool"},
		{"go build -C sub -o ../out/x .", "out/x"},
		{"go vet ./... && go build -o \"dist/app\" .", "dist/app"},
		{"CGO_ENABLED=0 go build -trimpath -o bin/a .", "bin/a"},
		{"go build -o $(shell echo x) .", ""},
		{"go build -o \"$OUT\" .", ""},
		{"go build ./...", ""},
		{"go test ./...", ""},
		{"go build -o /usr/local/bin/x .", ""},
	} {
		got, ok := goBuildOutput(c.cmd, g)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: got %q, %v; want %q", c.cmd, got, ok, c.want)
		}
	}
}

func TestMakefileSources(t *testing.T) {
	src := "SRC := server.py $(wildcard notes/*.py)\nOUT = bin/srv\n.PHONY: build\nbuild: $(OUT) # comment\n\n$(OUT): $(SRC) | lib\n\tcp server.py $@\nbin/srv: extra.txt\nlib: lib/a.sh\nother: $(shell find . -name x)\n"
	m := parseMakefile("Makefile", []byte(src))
	globs, unread := m.Sources("build")
	if got := strings.Join(globs, " "); got != "server.py notes/*.py lib/a.sh extra.txt" {
		t.Errorf("globs %q", globs)
	}
	if len(unread) != 0 {
		t.Errorf("unread %q", unread)
	}
	if _, unread := m.Sources("other"); len(unread) != 1 {
		t.Errorf("other: unread %q, want the $(shell …)", unread)
	}
}
