package audit

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestWriteFailsClosedOnCut: records a Log wrote taken from the log while
// it is open (truncated, or rewritten without a line, its end kept) make
// its next Write append only the log_recovered record that names it and
// fail with ErrCut, writing none of its own records; the Write after it
// appends again, and Verify reports the cut for good.
func TestWriteFailsClosedOnCut(t *testing.T) {
	for name, tc := range map[string]struct {
		cut    func(t *testing.T, path string)
		member string
		found  []string
	}{
		"truncated": {func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}, FieldCut, []string{"cut 1 1"}},
		"line deleted": {func(t *testing.T, path string) {
			lines := readLines(t, path)
			// In place (O_TRUNC keeps the inode), the last record kept.
			if err := os.WriteFile(path, []byte(lines[0]+strings.Join(lines[2:], "")), 0o600); err != nil {
				t.Fatal(err)
			}
		}, FieldShrunk, []string{"seq-gap 2 3", "broken-link 2 3", "cut 4 5"}},
	} {
		t.Run(name, func(t *testing.T) {
			l, path := openTemp(t)
			for i := range 4 {
				if n, err := l.Write([]Event{{Type: TypeToolCalled, Fields: map[string]any{FieldTool: "t"}, Guards: i%2 == 0}}); n != 1 || err != nil {
					t.Fatalf("Write %d = %d, %v", i, n, err)
				}
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			tc.cut(t, path)
			n, err := l.Write([]Event{{Type: TypeToolCalled, Fields: map[string]any{FieldTool: "after"}, Guards: true}})
			var we *WriteError
			if n != 0 || !errors.Is(err, ErrCut) || !errors.As(err, &we) || we.Op != "cut" {
				t.Fatalf("Write after the cut = %d, %v; want 0 and a *WriteError of ErrCut", n, err)
			}
			lines := readLines(t, path)
			last, _, err := parseLine([]byte(strings.TrimSuffix(lines[len(lines)-2], "\n")))
			if err != nil || last.Type != TypeLogRecovered || last.Fields[tc.member] == nil {
				t.Fatalf("last record %+v, want a log_recovered record with %s", last, tc.member)
			}
			if n, err := l.Write([]Event{{Type: TypeClientClosed, Guards: true}}); n != 1 || err != nil {
				t.Fatalf("Write after the recorded cut = %d, %v; want 1, nil", n, err)
			}
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			rep := verify(t, path)
			expectFindings(t, "problems", rep.Problems, tc.found...)
		})
	}
}
