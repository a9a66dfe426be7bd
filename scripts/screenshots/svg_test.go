package main

import (
	"encoding/xml"
	"strconv"
	"strings"
	"testing"
)

// TestSVG: colours of every SGR form reach the runs they apply to, text is
// escaped, other escape sequences and trailing blank lines leave no
// trace, and the result is well-formed XML.
func TestSVG(t *testing.T) {
	capture := "plain <a&b>\n" +
		"\x1b[1;31mbold red\x1b[0m \x1b[38;5;208morange\x1b[39m \x1b[38;2;1;2;3mrgb\x1b[m\n" +
		"\x1b[7minverse\x1b[27m \x1b[44mon blue\x1b[49m\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b[?25lhidden-cursor\n" +
		"\n   \n"
	out := SVG(capture, "mcpepoch approve")
	for _, want := range []string{
		`<tspan x="12.0">plain</tspan><tspan x="58.8">&lt;a&amp;b&gt;</tspan>`, // each word at its cell
		`fill="#f14c4c" font-weight="bold">red</tspan>`,
		`fill="#ff8700">orange</tspan>`,
		`fill="#010203">rgb</tspan>`,
		`fill="#1e1e1e">inverse</tspan>`,                             // the default background as foreground
		`fill="#3b8eea"/>`,                                           // the blue background's rect
		`>link</tspan><tspan x="168.0">hidden-cursor</tspan>`,        // OSC 8 and the cursor's CSI dropped
		`>mcpepoch approve</text>`,                                   // the title
		`height="` + strconv.Itoa(titleBar+3*lineHeight+2*pad) + `"`, // three lines: the blank ones cut
	} {
		if !strings.Contains(out, want) {
			t.Errorf("SVG lacks %s\n%s", want, out)
		}
	}
	d := xml.NewDecoder(strings.NewReader(out))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed XML: %v\n%s", err, out)
			}
			break
		}
	}
}
