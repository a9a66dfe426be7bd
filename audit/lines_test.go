package audit

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// splitLines is eachLine's reference: the lines of b as bytes.Split
// gives them, the last one only when not empty.
func splitLines(b []byte) []rawLine {
	var out []rawLine
	var off int64
	parts := bytes.Split(b, []byte("\n"))
	for i, p := range parts {
		last := i == len(parts)-1
		if last && len(p) == 0 {
			break
		}
		out = append(out, rawLine{n: i + 1, off: off, b: p, terminated: !last})
		off += int64(len(p)) + 1
	}
	return out
}

// TestEachLine: eachLine gives every line of its input, with its number,
// offset and newline, whatever the reads return and however long the
// lines (longer than its buffer, empty, an unterminated last one).
func TestEachLine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var in []byte
	for i := 0; i < 400; i++ {
		n := rng.IntN(3000)
		switch i % 97 {
		case 5:
			n = readBuf + rng.IntN(3*readBuf) // longer than the buffer
		case 6:
			n = 0
		}
		line := bytes.Repeat([]byte{byte('a' + i%26)}, n)
		in = append(append(in, line...), '\n')
	}
	in = append(in, "unterminated"...)
	want := splitLines(in)
	for name, r := range map[string]func() io.Reader{
		"whole": func() io.Reader { return bytes.NewReader(in) },
		"half":  func() io.Reader { return iotest.HalfReader(bytes.NewReader(in)) },
		"eof":   func() io.Reader { return iotest.DataErrReader(bytes.NewReader(in)) },
	} {
		var got []rawLine
		err := eachLine(r(), func(l rawLine) {
			l.b = bytes.Clone(l.b)
			got = append(got, l)
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d lines, want %d", name, len(got), len(want))
		}
		for i := range want {
			g, w := got[i], want[i]
			if g.n != w.n || g.off != w.off || g.terminated != w.terminated || !bytes.Equal(g.b, w.b) {
				t.Fatalf("%s: line %d: got n=%d off=%d term=%v len=%d, want n=%d off=%d term=%v len=%d",
					name, i, g.n, g.off, g.terminated, len(g.b), w.n, w.off, w.terminated, len(w.b))
			}
		}
	}
	boom := errors.New("boom")
	err := eachLine(io.MultiReader(bytes.NewReader(in[:5000]), iotest.ErrReader(boom)), func(rawLine) {})
	if !errors.Is(err, boom) {
		t.Fatalf("read error: %v, want %v", err, boom)
	}
}

// FuzzSeqHashes: seqHashes keeps the hash of each seq's first record, as
// a map of every seq does.
func FuzzSeqHashes(f *testing.F) {
	f.Add([]byte{1, 2, 3, 3, 5, 4, 5, 6})
	f.Fuzz(func(t *testing.T, seqs []byte) {
		var s seqHashes
		ref := map[int64]string{}
		for i, b := range seqs {
			seq, h := int64(b)-2, string(rune('A'+i%50))
			s.note(seq, h)
			if _, ok := ref[seq]; !ok {
				ref[seq] = h
			}
		}
		for seq := int64(-3); seq < 260; seq++ {
			got, ok := s.hash(seq)
			want, wok := ref[seq]
			if got != want || ok != wok {
				t.Fatalf("seq %d: %q %v, want %q %v", seq, got, ok, want, wok)
			}
		}
	})
}
