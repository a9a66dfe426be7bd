package toolschema

import (
	"encoding/json"
	"testing"
)

// plainCases are inputSchemas of the plain form and arguments on both
// sides of each rule.
var plainSchemas = []string{
	`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`,
	`{"type":"object","properties":{"n":{"type":"integer","description":"count"},"x":{"type":"number"},"b":{"type":"boolean"},"z":{"type":"null"},"o":{"type":"object"},"a":{"type":"array"},"any":{},"t":true},"additionalProperties":false}`,
	`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","title":"t","required":["a","b"]}`,
	`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"type":"string","default":"x"}},"additionalProperties":true}`,
	`{"type":"object"}`,
	`{}`,
	`{"type":"object","properties":{"mode":{"type":"string","enum":["fast","slow","a b"]},"n":{"type":"integer","minimum":1,"maximum":10},"x":{"type":"number","minimum":-2.5,"maximum":1e3},"tags":{"type":"array","items":{"type":"string","enum":["x","y"]}}},"required":["mode"]}`,
	`{"type":"object","properties":{"any":{"enum":["1","2"]},"m":{"minimum":0},"grid":{"type":"array","items":{"type":"array","items":{"type":"integer","maximum":9007199254740993}}},"t":{"items":true}}}`,
}

var plainArgs = []string{
	`{}`, `{"text":"hi"}`, `{"text":5}`, `{"text":"a","text":"b"}`, `{"text":"a","text":1}`, `{"te\u0078t":"hi"}`,
	`{"text":"x","extra":[1,{"a":2}]}`, `{"n":1}`, `{"n":1.0}`, `{"n":1e2}`, `{"n":-9223372036854775808}`,
	`{"n":18446744073709551615}`, `{"n":"1"}`, `{"x":1.5e400}`, `{"x":-0}`, `{"b":true}`, `{"b":0}`, `{"z":null}`,
	`{"z":false}`, `{"o":{}}`, `{"o":[]}`, `{"a":[]}`, `{"a":{}}`, `{"any":{"q":[null]}}`, `{"t":1}`, `{"q":1}`,
	`{"a":"1","b":"2"}`, `{"a":"1"}`, `{"b":2,"a":1}`, ` {"a":1,"b":2} `, `[]`, `"s"`, `7`, `{"é":1}`,
	`{"mode":"fast"}`, `{"mode":"a b"}`, `{"mode":"Fast"}`, `{"mode":"f\u0061st"}`, `{"mode":5}`, `{"mode":"fast","n":1}`,
	`{"mode":"slow","n":10}`, `{"mode":"slow","n":0}`, `{"mode":"slow","n":11}`, `{"mode":"slow","n":5.0}`, `{"mode":"x","n":5}`,
	`{"mode":"fast","x":-2}`, `{"mode":"fast","x":-3}`, `{"mode":"fast","x":1000}`, `{"mode":"fast","x":1001}`, `{"mode":"fast","x":0.5}`,
	`{"mode":"fast","tags":[]}`, `{"mode":"fast","tags":["x","y","x"]}`, `{"mode":"fast","tags":["x","z"]}`, `{"mode":"fast","tags":[1]}`,
	`{"mode":"fast","tags":"x"}`, `{"any":"1"}`, `{"any":1}`, `{"any":"3"}`, `{"m":0}`, `{"m":-1}`, `{"m":"-1"}`, `{"m":-0}`,
	`{"grid":[[1,2],[3]]}`, `{"grid":[[1,"2"]]}`, `{"grid":[1]}`, `{"grid":[[9007199254740992]]}`, `{"grid":[[9007199254740993]]}`,
	`{"grid":[[9007199254740994]]}`, `{"grid":[[-9007199254740993]]}`, `{"t":[1,"a",{}]}`, `{"t":5}`, `{"n":1,"mode":"fast"}`,
}

// TestPlainSchemaAgreesWithValidator: the fast check never says valid
// where the validator says invalid, and says valid for the ordinary
// calls it exists for.
func TestPlainSchemaAgreesWithValidator(t *testing.T) {
	fast := 0
	for _, s := range plainSchemas {
		p := compilePlain(json.RawMessage(s))
		if p == nil {
			t.Fatalf("%s: not compiled as a plain schema", s)
		}
		for _, a := range plainArgs {
			if checkPlain(t, s, p, a) {
				fast++
			}
		}
	}
	if fast < 40 {
		t.Errorf("only %d of the valid cases took the fast check", fast)
	}
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string","minLength":2}}}`,
		`{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
		`{"type":"object","properties":{"a":false}}`,
		`{"type":"object","patternProperties":{"x":{}}}`,
		`{"type":"object","properties":{"a\\"b":{}}}`,
		`{"type":"object","properties":{"a":{"type":"string","format":"email"}}}`,
		`{"type":"object","$defs":{}}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object"}`,
		`{"type":"string"}`,
		`{"type":"object","properties":{"a":{"enum":["x",1]}}}`,
		`{"type":"object","properties":{"a":{"enum":["\u0078"]}}}`,
		`{"type":"object","properties":{"a":{"enum":[]}}}`,
		`{"type":"object","properties":{"a":{"minimum":"1"}}}`,
		`{"type":"object","properties":{"a":{"maximum":1e400}}}`,
		`{"type":"object","properties":{"a":{"items":[{"type":"string"}]}}}`,
		`{"type":"object","properties":{"a":{"items":false}}}`,
		`{"type":"object","properties":{"a":{"items":{"items":{"items":{"items":{"items":{"items":{}}}}}}}}}`,
		`{"type":"object","properties":{"a":{"exclusiveMinimum":1}}}`,
	} {
		if compilePlain(json.RawMessage(s)) != nil {
			t.Errorf("%s: compiled as a plain schema", s)
		}
	}
}

// checkPlain compares the fast check of args with the validator's verdict
// and reports whether the fast check answered.
func checkPlain(t testing.TB, schema string, p *plainSchema, args string) bool {
	t.Helper()
	if !json.Valid([]byte(args)) {
		return false
	}
	res, err := compileSchema(json.RawMessage(schema))
	if err != nil {
		t.Fatalf("%s: %v", schema, err)
	}
	inst, err := schemaInstance(json.RawMessage(args))
	if err == nil {
		err = res.Validate(inst)
	}
	if p.valid([]byte(args)) {
		if err != nil {
			t.Errorf("schema %s, arguments %s: fast check valid, validator: %v", schema, args, err)
		}
		return true
	}
	return false
}

func FuzzPlainSchemaAgrees(f *testing.F) {
	for i, a := range plainArgs {
		f.Add(plainSchemas[i%len(plainSchemas)], a)
	}
	f.Fuzz(func(t *testing.T, schema, args string) {
		if !json.Valid([]byte(schema)) {
			return
		}
		p := compilePlain(json.RawMessage(schema))
		if p == nil {
			return
		}
		if _, err := compileSchema(json.RawMessage(schema)); err != nil {
			return // the host forwards unchecked: no fast check either
		}
		checkPlain(t, schema, p, args)
	})
}

// An enum of plain strings, numeric bounds and items are checked by the
// fast check itself: calls inside them take it, and what falls outside
// them (or cannot be compared exactly) goes to the validator.
func TestPlainSchemaChecksEnumBoundsItems(t *testing.T) {
	s := plainSchemas[len(plainSchemas)-2]
	p := compilePlain(json.RawMessage(s))
	if p == nil {
		t.Fatalf("%s: not compiled as a plain schema", s)
	}
	for args, fast := range map[string]bool{
		`{"mode":"fast","n":1}`: true, `{"mode":"a b","n":10,"x":-2}`: true, `{"mode":"slow","x":1000}`: true,
		`{"mode":"fast","tags":["x","y"]}`: true, `{"mode":"fast","tags":[]}`: true,
		`{"mode":"Fast"}`: false, `{"mode":"f\u0061st"}`: false, `{"mode":"fast","n":0}`: false, `{"mode":"fast","n":11}`: false,
		`{"mode":"fast","x":-3}`: false, `{"mode":"fast","x":0.5}`: false, `{"mode":"fast","tags":["z"]}`: false,
		`{"mode":"fast","tags":[1]}`: false,
	} {
		if got := p.valid([]byte(args)); got != fast {
			t.Errorf("schema %s, arguments %s: fast check %v, want %v", s, args, got, fast)
		}
		checkPlain(t, s, p, args)
	}
}
