package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Geometry of the SVG terminal, in pixels: a cell of a monospace font at
// fontSize, the padding around the text, and the title bar.
const (
	fontSize   = 13
	cellWidth  = 7.8 // DejaVu Sans Mono and Menlo advance 0.6 em
	lineHeight = 17
	pad        = 12
	titleBar   = 28
)

// Default colours: a dark terminal, legible on GitHub's light and dark
// themes alike.
const (
	defaultFG = "#d4d4d4"
	defaultBG = "#1e1e1e"
)

// basic are the 16 ANSI colours (SGR 30–37, 90–97 and 256-colour 0–15).
var basic = [16]string{
	"#1e1e1e", "#f14c4c", "#23d18b", "#e5e510", "#3b8eea", "#d670d6", "#29b8db", "#d4d4d4",
	"#808080", "#ff6b6b", "#3ee8a0", "#f5f543", "#5ca8ff", "#e68ae6", "#4fd1ee", "#ffffff",
}

// style is the SGR state of a cell.
type style struct {
	fg, bg             string // "" for the default
	bold, dim, italic  bool
	underline, inverse bool
}

// cell is one character of the screen.
type cell struct {
	r rune
	s style
}

// SVG renders capture, the text of a terminal screen with SGR escape
// sequences (as tmux capture-pane -p -e prints it), as an SVG image of a
// terminal window titled title. Escape sequences other than SGR are
// dropped; each rune takes one cell; trailing blank lines are left out.
func SVG(capture, title string) string {
	screen := parse(capture)
	cols := 0
	for _, line := range screen {
		cols = max(cols, len(line))
	}
	width := int(float64(cols)*cellWidth+0.5) + 2*pad
	height := titleBar + len(screen)*lineHeight + 2*pad
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" rx="8" fill="%s"/>`+"\n", width, height, defaultBG)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" rx="8" fill="#323233"/><rect y="%d" width="%d" height="8" fill="#323233"/>`+"\n", width, titleBar, titleBar-8, width)
	for i, c := range []string{"#ff5f57", "#febc2e", "#28c840"} {
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="6" fill="%s"/>`, 18+i*20, titleBar/2, c)
	}
	b.WriteString("\n")
	if title != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-family="system-ui, sans-serif" font-size="12" fill="#c0c0c0">%s</text>`+"\n",
			width/2, titleBar/2+4, escape(title))
	}
	fmt.Fprintf(&b, `<g font-family="ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace" font-size="%d" fill="%s">`+"\n", fontSize, defaultFG)
	for y, line := range screen {
		top := titleBar + pad + y*lineHeight
		base := top + lineHeight - 4
		// Backgrounds first, one rect per run of cells of one colour.
		for x := 0; x < len(line); {
			bg := cellColors(line[x].s).bg
			n := 1
			for x+n < len(line) && cellColors(line[x+n].s).bg == bg {
				n++
			}
			if bg != "" {
				fmt.Fprintf(&b, `<rect x="%s" y="%d" width="%s" height="%d" fill="%s"/>`, px(x), top, pxw(n), lineHeight, bg)
			}
			x += n
		}
		// Text, one tspan per word of one style, each placed at its cell:
		// no renderer collapses or shifts the spaces between them.
		var t strings.Builder
		for x := 0; x < len(line); {
			if line[x].r == ' ' {
				x++
				continue
			}
			n := 1
			for x+n < len(line) && line[x+n].r != ' ' && line[x+n].s == line[x].s {
				n++
			}
			var text strings.Builder
			for _, c := range line[x : x+n] {
				text.WriteRune(c.r)
			}
			fmt.Fprintf(&t, `<tspan x="%s"%s>%s</tspan>`, px(x), attrs(line[x].s), escape(text.String()))
			x += n
		}
		if t.Len() > 0 {
			fmt.Fprintf(&b, `<text y="%d">%s</text>`+"\n", base, t.String())
		}
	}
	b.WriteString("</g>\n</svg>\n")
	return b.String()
}

// px is the x coordinate of column x.
func px(x int) string { return strconv.FormatFloat(float64(pad)+float64(x)*cellWidth, 'f', 1, 64) }

// pxw is the width of n cells.
func pxw(n int) string { return strconv.FormatFloat(float64(n)*cellWidth, 'f', 1, 64) }

// cellColors is s with inverse applied: the colours the cell shows.
func cellColors(s style) style {
	if s.inverse {
		fg, bg := s.fg, s.bg
		if fg == "" {
			fg = defaultFG
		}
		if bg == "" {
			bg = defaultBG
		}
		s.fg, s.bg = bg, fg
	}
	return s
}

// attrs are the SVG attributes of a run of style s.
func attrs(s style) string {
	c := cellColors(s)
	var a strings.Builder
	if c.fg != "" {
		fmt.Fprintf(&a, ` fill="%s"`, c.fg)
	}
	if s.bold {
		a.WriteString(` font-weight="bold"`)
	}
	if s.dim {
		a.WriteString(` opacity="0.6"`)
	}
	if s.italic {
		a.WriteString(` font-style="italic"`)
	}
	if s.underline {
		a.WriteString(` text-decoration="underline"`)
	}
	return a.String()
}

// escape makes s safe as XML character data.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// parse reads capture into lines of cells. Trailing blank lines are
// dropped.
func parse(capture string) [][]cell {
	var screen [][]cell
	var line []cell
	var s style
	for i := 0; i < len(capture); {
		c := capture[i]
		switch {
		case c == '\n':
			screen = append(screen, line)
			line = nil
			i++
		case c == '\r':
			i++
		case c == 0x1b && i+1 < len(capture) && capture[i+1] == '[':
			j := i + 2
			for j < len(capture) && (capture[j] < 0x40 || capture[j] > 0x7e) {
				j++
			}
			if j < len(capture) && capture[j] == 'm' {
				s = sgr(s, capture[i+2:j])
			}
			i = j + 1
		case c == 0x1b && i+1 < len(capture) && capture[i+1] == ']':
			// OSC (a hyperlink, a title): up to BEL or ST.
			j := i + 2
			for j < len(capture) && capture[j] != 0x07 && !(capture[j] == 0x1b && j+1 < len(capture) && capture[j+1] == '\\') {
				j++
			}
			if j < len(capture) && capture[j] == 0x1b {
				j++
			}
			i = j + 1
		case c == 0x1b:
			i += 2
		case c == '\t':
			for {
				line = append(line, cell{' ', s})
				if len(line)%8 == 0 {
					break
				}
			}
			i++
		case c < 0x20 || c == 0x7f:
			i++
		default:
			r, size := utf8.DecodeRuneInString(capture[i:])
			line = append(line, cell{r, s})
			i += size
		}
	}
	if len(line) > 0 {
		screen = append(screen, line)
	}
	for len(screen) > 0 && blank(screen[len(screen)-1]) {
		screen = screen[:len(screen)-1]
	}
	return screen
}

// blank reports whether line shows nothing.
func blank(line []cell) bool {
	for _, c := range line {
		if c.r != ' ' || cellColors(c.s).bg != "" {
			return false
		}
	}
	return true
}

// sgr applies the parameters params ("1;38;5;208") of an SGR sequence to s.
func sgr(s style, params string) style {
	if params == "" {
		return style{}
	}
	ps := strings.FieldsFunc(params, func(r rune) bool { return r == ';' || r == ':' })
	num := func(i int) int {
		if i >= len(ps) {
			return -1
		}
		n, err := strconv.Atoi(ps[i])
		if err != nil {
			return -1
		}
		return n
	}
	for i := 0; i < len(ps); i++ {
		switch n := num(i); {
		case n == 0:
			s = style{}
		case n == 1:
			s.bold = true
		case n == 2:
			s.dim = true
		case n == 3:
			s.italic = true
		case n == 4:
			s.underline = true
		case n == 7:
			s.inverse = true
		case n == 22:
			s.bold, s.dim = false, false
		case n == 23:
			s.italic = false
		case n == 24:
			s.underline = false
		case n == 27:
			s.inverse = false
		case n >= 30 && n <= 37:
			s.fg = basic[n-30]
		case n == 39:
			s.fg = ""
		case n >= 40 && n <= 47:
			s.bg = basic[n-40]
		case n == 49:
			s.bg = ""
		case n >= 90 && n <= 97:
			s.fg = basic[n-90+8]
		case n >= 100 && n <= 107:
			s.bg = basic[n-100+8]
		case n == 38 || n == 48:
			var c string
			switch num(i + 1) {
			case 5:
				c = color256(num(i + 2))
				i += 2
			case 2:
				c = rgb(num(i+2), num(i+3), num(i+4))
				i += 4
			}
			if n == 38 {
				s.fg = c
			} else {
				s.bg = c
			}
		}
	}
	return s
}

// color256 is colour n of the xterm 256-colour palette, "" when out of
// range.
func color256(n int) string {
	switch {
	case n < 0 || n > 255:
		return ""
	case n < 16:
		return basic[n]
	case n < 232:
		n -= 16
		level := func(v int) int {
			if v == 0 {
				return 0
			}
			return 55 + v*40
		}
		return rgb(level(n/36), level(n/6%6), level(n%6))
	default:
		v := 8 + (n-232)*10
		return rgb(v, v, v)
	}
}

// rgb is #rrggbb, "" when a component is out of range.
func rgb(r, g, b int) string {
	for _, v := range []int{r, g, b} {
		if v < 0 || v > 255 {
			return ""
		}
	}
	return fmt.Sprintf("#%02x%02x%02x", r, g, b)
}
