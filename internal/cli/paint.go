package cli

import (
	"io"
	"os"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
)

// Painter colours status lines on a terminal, or wherever they go when
// CLICOLOR_FORCE is set to anything but "0" (https://bixense.com/clicolors:
// a build log piped through tee or less -R), and never when NO_COLOR is set
// (https://no-color.org). The zero Painter paints nothing.
type Painter struct{ on bool }

// NewPainter returns the Painter for lines written to w.
func NewPainter(w io.Writer) Painter {
	if os.Getenv("NO_COLOR") != "" {
		return Painter{}
	}
	if f := os.Getenv("CLICOLOR_FORCE"); f != "" && f != "0" {
		return Painter{on: true}
	}
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return Painter{}
	}
	return Painter{on: isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())}
}

// Paint is s in the colour attr.
func (p Painter) Paint(attr color.Attribute, s string) string {
	if !p.on {
		return s
	}
	c := color.New(attr)
	c.EnableColor()
	return c.Sprint(s)
}

// Ok is s in green: it went well.
func (p Painter) Ok(s string) string { return p.Paint(color.FgGreen, s) }

// Warn is s in yellow: worth a look.
func (p Painter) Warn(s string) string { return p.Paint(color.FgYellow, s) }

// Bad is s in red: it went wrong.
func (p Painter) Bad(s string) string { return p.Paint(color.FgRed, s) }
