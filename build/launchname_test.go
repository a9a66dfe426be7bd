package build

import (
	"regexp"
	"testing"
)

// TestIsPythonName: isPythonName says what the pattern
// ^(python|pypy)(\d+(\.\d+)?)?$ says, for interpreter names and near misses.
func TestIsPythonName(t *testing.T) {
	re := regexp.MustCompile(`^(python|pypy)(\d+(\.\d+)?)?$`)
	for _, name := range []string{
		"python", "python3", "python3.12", "python310", "pypy", "pypy3", "pypy3.10",
		"", "py", "pytho", "ipython", "pythonw", "python3.", "python.3", "python3.12.1",
		"python3a", "python3.1a", "python-3", "node", "pypy.3", "Python3", "python3..1",
	} {
		if got, want := isPythonName(name), re.MatchString(name); got != want {
			t.Errorf("isPythonName(%q) = %v, want %v", name, got, want)
		}
	}
}
