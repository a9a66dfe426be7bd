package checkup

// String is p on one line, as the tests print it.
func (p Problem) String() string { return p.Where + ": " + p.What + "; fix: " + p.Fix }
