package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// NewFlags returns a FlagSet for subcommand name that reports errors as
// usage errors and prints its help to w, flags spelled --name as the README
// spells them (the flag package accepts both - and --).
func NewFlags(name string, w io.Writer, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpepoch "+name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() {
		fmt.Fprintf(w, "usage: mcpepoch %s %s\n\n", name, synopsis)
		PrintDefaults(w, fs)
	}
	return fs
}

// PrintDefaults is flag.PrintDefaults with "--" before each flag's name
// ("-" before a one-letter name):
// one "  --name type" line per flag, then its usage, with the default
// value when it is not the zero value.
func PrintDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, text := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if len(f.Name) == 1 {
			line = "  -" + f.Name // -q, not --q
		}
		if name != "" {
			line += " " + name
		}
		text = strings.ReplaceAll(text, "\n", "\n    \t")
		switch f.DefValue {
		case "", "false", "0", "0s", "[]":
		default:
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				text += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				text += fmt.Sprintf(" (default %v)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, text)
	})
}

// ParseFlags parses args, turning a flag error into a usage exit.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return SilentExit(ExitUsage)
	}
	return nil
}

// ShortLong defines the bool flag -short and its long spelling --long,
// both setting v.
func ShortLong(fs *flag.FlagSet, v *bool, short, long, usage string) {
	fs.BoolVar(v, short, false, usage)
	fs.BoolVar(v, long, false, "same as -"+short)
}

// StringList is a repeatable string flag.
type StringList []string

func (l *StringList) String() string     { return strings.Join(*l, ",") }
func (l *StringList) Set(s string) error { *l = append(*l, s); return nil }
