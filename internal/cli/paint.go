package cli

import (
	"io"
	"os"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
)

// Painter colours status lines on a terminal only, and never when NO_COLOR
// is set (https://no-color.org). The zero Painter paints nothing.
type Painter struct{ on bool }

// NewPainter returns the Painter for lines written to w.
func NewPainter(w io.Writer) Painter {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb" {
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

// Colours returns a Painter that colours when on is true, whatever the
// output is.
func Colours(on bool) Painter { return Painter{on: on} }
