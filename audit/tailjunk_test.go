package audit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// lowerTailLimits makes the tail bounds small for one test, so that the
// files stay small.
func lowerTailLimits(t *testing.T, line int64, lines int) {
	oldLine, oldLines := maxTailLine, maxTornLines
	maxTailLine, maxTornLines = line, lines
	t.Cleanup(func() { maxTailLine, maxTornLines = oldLine, oldLines })
}

// TestTailPastBounds: lines after the last record that are longer or more
// than Open closes make Open refuse the log, naming the offset where the
// first such line starts, and Verify report the same as a problem at the
// same line; neither changes a byte. A tail just within the bounds is a
// torn tail to both: Open closes it, Verify warns.
func TestTailPastBounds(t *testing.T) {
	const limit = 64<<10 + 5 // past the 64 KiB chunk lineBefore reads
	long := func(n int) []byte { return bytes.Repeat([]byte("A"), n) }
	junk := func(n int) []byte { return bytes.Repeat([]byte("{\"x\":1}\n"), n) }
	for _, tc := range []struct {
		name    string
		tail    []byte
		refused bool
	}{
		{"long line", append(long(3*limit), '\n'), true},
		{"long torn line", long(limit + 1), true},
		{"long line then junk", append(append(long(limit+1), '\n'), junk(2)...), true},
		{"too many lines", junk(5), true},
		{"line at the limit", append(long(limit), '\n'), false},
		{"lines at the limit", junk(4), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lowerTailLimits(t, limit, 4)
			path := writeLog(t, 3)
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			start := st.Size()
			appendRaw(t, path, tc.tail)
			before, _ := os.ReadFile(path)

			rep := verify(t, path)
			l, err := Open(path, nil)
			if !tc.refused {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				l.Close()
				if !rep.OK || len(rep.Warnings) == 0 || rep.Warnings[0].Kind != WarnTornTail {
					t.Fatalf("Verify: %+v, want torn-tail warnings only", rep)
				}
				return
			}
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Offset != start {
				t.Fatalf("Open: %v, want a CorruptError at offset %d", err, start)
			}
			if n := strings.Count(err.Error(), "audit verify"); n != 1 {
				t.Errorf("Open: %q gives its advice %d times", err, n)
			}
			if len(rep.Problems) != 1 || rep.Problems[0].Kind != ProblemTailTooLong || rep.Problems[0].Line != 4 ||
				!strings.Contains(rep.Problems[0].Msg, fmt.Sprintf("offset %d:", start)) {
				t.Fatalf("Verify: %+v, want one %s problem at line 4, offset %d", rep.Problems, ProblemTailTooLong, start)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Fatal("the log changed")
			}
		})
	}
}
