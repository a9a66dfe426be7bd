package procstat

import "testing"

func TestParse(t *testing.T) {
	st, err := Parse(42, []byte("42 (a) b (c) S 7 42 42 0 -1 4194560 0 0 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st != (Stat{PID: 42, Comm: "a) b (c", State: "S", PPID: 7, PGID: 42}) {
		t.Errorf("Parse = %+v", st)
	}
	if _, err := Parse(42, []byte("42 (a) S")); err == nil {
		t.Error("Parse accepted a short line")
	}
	if st, err := Read(1); err != nil || st.State == "" {
		t.Errorf("Read(1) = %+v, %v", st, err)
	}
}
