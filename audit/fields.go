package audit

import "fmt"

// Attr is one field of an event (Event.Attrs): its name and its value,
// as a value of Event.Fields.
type Attr struct {
	Key   string
	Value any
}

// fieldMembers appends to sc the canonical value of each field of ev,
// Fields then Attrs, and to ms its member, named as validKey makes the
// name valid UTF-8. Two names that become one that way are refused.
func (e *encoder) fieldMembers(sc []byte, ms []member, ev Event) ([]byte, []member, error) {
	var seen map[string]bool // only when a field name is not valid UTF-8
	one := func(k string, v any) error {
		vk := validKey(k)
		if vk != k {
			if seen == nil {
				seen = ev.validNames()
			}
			if seen[vk] {
				return fmt.Errorf("event %s: duplicate field name %.40q", ev.Type, vk)
			}
			seen[vk] = true
		}
		start := len(sc)
		var err error
		if sc, err = appendValue(sc, v, 1); err != nil {
			return fmt.Errorf("event %s: field %q: %v", ev.Type, k, err)
		}
		ms = append(ms, member{key: vk, val: sc[start:len(sc):len(sc)]})
		return nil
	}
	for k, v := range ev.Fields {
		if err := one(k, v); err != nil {
			return sc, ms, err
		}
	}
	for _, a := range ev.Attrs {
		if err := one(a.Key, a.Value); err != nil {
			return sc, ms, err
		}
	}
	return sc, ms, nil
}

// validNames returns the set of ev's field names that are valid UTF-8.
func (ev Event) validNames() map[string]bool {
	seen := make(map[string]bool, len(ev.Fields)+len(ev.Attrs))
	for k := range ev.Fields {
		if validKey(k) == k {
			seen[k] = true
		}
	}
	for _, a := range ev.Attrs {
		if validKey(a.Key) == a.Key {
			seen[a.Key] = true
		}
	}
	return seen
}
