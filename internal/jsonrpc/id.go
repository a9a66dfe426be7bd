package jsonrpc

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// IDKey turns a JSON-RPC id into a map key by value, so that a peer that
// re-encodes an id ("\u0041" as "A", 1.0 as 1, 1e2 as 100) is still
// matched. A string id's key is "s" and the string, a number's "n" and its
// exact value as a fraction (big.Rat.RatString); anything else is "r" and
// its raw bytes, so strings and numbers never collide ("1" vs 1). An
// absent id has the key "".
func IDKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return ""
	}
	switch c := id[0]; {
	case c == '"':
		if s, ok := plainString(id); ok {
			return "s" + s
		}
		var s string
		if json.Unmarshal(id, &s) == nil {
			return "s" + s
		}
	case c == '-' || (c >= '0' && c <= '9'):
		if plainInt(id) {
			return "n" + string(id) // what RatString gives for it
		}
		if r, ok := numberRat(id); ok {
			return "n" + r.RatString()
		}
	}
	return "r" + string(id)
}

// numberRat reads a JSON number exactly. Numbers longer than 64 bytes or
// with an exponent beyond ±400 are not read (1e1000000000 would take
// gigabytes as an exact value).
func numberRat(n []byte) (*big.Rat, bool) {
	if len(n) > 64 {
		return nil, false
	}
	if i := bytes.IndexAny(n, "eE"); i >= 0 {
		exp, err := strconv.Atoi(strings.TrimPrefix(string(n[i+1:]), "+"))
		if err != nil || exp > 400 || exp < -400 {
			return nil, false
		}
	}
	return new(big.Rat).SetString(string(n))
}

// maxExactID is the largest integer every JSON implementation holds
// exactly, 2^53.
var maxExactID = new(big.Int).Lsh(big.NewInt(1), 53)

// plainInt reports whether n is an integer literal in the form RatString
// writes (no leading zero, no "-0", no fraction or exponent) of at most
// 15 digits, within 2^53: the ids SDKs send, read without big.Rat.
func plainInt(n []byte) bool {
	d := n
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || d[0] == '0' && (len(d) > 1 || len(n) > 1) {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainString returns the value of the JSON string literal s when it has
// no escape and only printable ASCII, the value then being its bytes.
func plainString(s []byte) (string, bool) {
	if len(s) < 2 || s[len(s)-1] != '"' {
		return "", false
	}
	b := s[1 : len(s)-1]
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(b), true
}
