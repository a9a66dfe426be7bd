package toolschema

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// FuzzSchemaInstance: any valid JSON decodes for the inputSchema check,
// numbers beyond float64 included, the validator never panics on what it
// yields, and a number keeps its exact side of a maximum: always for an
// integer within int64, else unless it is validated as that very float64,
// the one case numberValue's rounding shows.
func FuzzSchemaInstance(f *testing.F) {
	for _, s := range []string{`1e400`, `-1e400`, `1e-400`, `-0`, `9007199254740993`, `18446744073709551616`,
		`{"a":[1.5,2E+3,"x",null,true]}`, `0.1`, `1.7976931348623157e308`} {
		f.Add([]byte(s))
	}
	var bounded []*jsonschema.Resolved
	for _, b := range []string{`0`, `9007199254740992`, `1e308`, `-1e308`, `0.1`} {
		s, err := compileSchema(json.RawMessage(`{"maximum":` + b + `,"multipleOf":0.5,"type":["number","object","array","string","null","boolean"]}`))
		if err != nil {
			f.Fatal(err)
		}
		bounded = append(bounded, s)
	}
	bounds := []float64{0, 9007199254740992, 1e308, -1e308, 0.1}
	f.Fuzz(func(t *testing.T, args []byte) {
		if !json.Valid(args) {
			return
		}
		inst, err := schemaInstance(args)
		if err != nil {
			t.Fatalf("schemaInstance(%q): %v", args, err)
		}
		exact, isNumber := new(big.Rat).SetString(string(bytes.TrimSpace(args)))
		for i, s := range bounded {
			err := s.Validate(inst)
			if !isNumber || err != nil && !strings.HasPrefix(err.Error(), "maximum") {
				continue
			}
			over := exact.Cmp(new(big.Rat).SetFloat64(bounds[i])) > 0
			if f, ok := inst.(float64); ok && f == bounds[i] && !(exact.IsInt() && exact.Num().BitLen() <= 63) {
				continue
			}
			if over != (err != nil) {
				t.Fatalf("%s against maximum %v: validated as %v, refused=%v", args, bounds[i], inst, err != nil)
			}
		}
	})
}
