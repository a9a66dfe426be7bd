package main

import "strings"

// shortHex is how many hex digits of a digest human screens show.
const shortHex = 12

// screen is how a command prints for a person: colour (p) and whether
// digests are shown whole (--full) or cut to shortHex digits. --json
// output is never cut.
type screen struct {
	p    painter
	full bool
}

// digest returns d for a human screen: "sha256:5d5085d29763" for
// "sha256:5d5085d29763…" (64 hex), whole with --full. A value that is not
// ALGO:HEX is returned as it is. The result goes through printable.
func (s screen) digest(d string) string {
	if s.full {
		return printable(d)
	}
	alg, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= shortHex || strings.Trim(hex, "0123456789abcdef") != "" {
		return printable(d)
	}
	return printable(alg + ":" + hex[:shortHex])
}
