package project

import "testing"

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
