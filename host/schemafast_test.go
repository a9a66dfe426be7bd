package host

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
}

var plainArgs = []string{
	`{}`, `{"text":"hi"}`, `{"text":5}`, `{"text":"a","text":"b"}`, `{"text":"a","text":1}`, `{"te\u0078t":"hi"}`,
	`{"text":"x","extra":[1,{"a":2}]}`, `{"n":1}`, `{"n":1.0}`, `{"n":1e2}`, `{"n":-9223372036854775808}`,
	`{"n":18446744073709551615}`, `{"n":"1"}`, `{"x":1.5e400}`, `{"x":-0}`, `{"b":true}`, `{"b":0}`, `{"z":null}`,
	`{"z":false}`, `{"o":{}}`, `{"o":[]}`, `{"a":[]}`, `{"a":{}}`, `{"any":{"q":[null]}}`, `{"t":1}`, `{"q":1}`,
	`{"a":"1","b":"2"}`, `{"a":"1"}`, `{"b":2,"a":1}`, ` {"a":1,"b":2} `, `[]`, `"s"`, `7`, `{"é":1}`,
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
