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
		var s string
		if json.Unmarshal(id, &s) == nil {
			return "s" + s
		}
	case c == '-' || (c >= '0' && c <= '9'):
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
