// Package pgjson is PostgreSQL's jsonb as values the proxy computes with:
// jsonb_in's parsing and normalisation, jsonb_out's text, and the
// operators (->, ->>, #>, #>>, @>, <@, ?, ?|, ?&), the order of jsonb's
// B-tree operator class (compareJsonbContainers) and the casts to SQL
// scalars, each as PostgreSQL 15 computes them. Strings are ordered byte
// by byte: callers use it only in databases whose collation does so.
package pgjson

import (
	"slices"
	"strings"

	"github.com/pgonion/pgonion/internal/pgnumeric"
)

// Kind is a JSON value's type, in jsonb's order of types (null lowest).
type Kind uint8

// Kinds, in jsonb's type order.
const (
	Null Kind = iota
	String
	Number
	Bool
	Array
	Object
)

// Value is a parsed jsonb value. A top-level scalar is a Value of its
// kind (jsonb's raw scalar).
type Value struct {
	Kind Kind
	// Str is a String's decoded text, a Number's numeric_out text.
	Str string
	// Num is a Number's value.
	Num pgnumeric.Decimal
	// True is a Bool's value.
	True bool
	// Keys are an Object's keys, sorted (length, then bytes) without
	// duplicates; Items its values in that order, or an Array's elements.
	Keys  []string
	Items []*Value
}

// IsScalar reports whether v is neither an array nor an object.
func (v *Value) IsScalar() bool { return v.Kind < Array }

// Normalized returns object v (built by a caller) with its keys sorted
// as jsonb stores them, the last of duplicate keys kept; v itself for
// other kinds.
func (v *Value) Normalized() *Value {
	if v.Kind != Object {
		return v
	}
	w := &Value{Kind: Object, Keys: v.Keys, Items: v.Items}
	w.normalize()
	return w
}

// normalize sorts an object's keys as jsonb stores them, the last of
// duplicate keys kept.
func (v *Value) normalize() {
	idx := make([]int, len(v.Keys))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return compareKeys(v.Keys[a], v.Keys[b]) })
	keys, items := make([]string, 0, len(idx)), make([]*Value, 0, len(idx))
	for j, i := range idx {
		if j+1 < len(idx) && v.Keys[idx[j+1]] == v.Keys[i] {
			continue // a later duplicate wins
		}
		keys, items = append(keys, v.Keys[i]), append(items, v.Items[i])
	}
	v.Keys, v.Items = keys, items
}

// compareKeys is jsonb's storage order of object keys: shorter first,
// then bytes (lengthCompareJsonbString).
func compareKeys(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	return strings.Compare(a, b)
}

// field is the value of key in object v (nil when absent).
func (v *Value) field(key string) *Value {
	i, ok := slices.BinarySearchFunc(v.Keys, key, compareKeys)
	if !ok {
		return nil
	}
	return v.Items[i]
}

// AppendText appends jsonb_out's text of v.
func (v *Value) AppendText(dst []byte) []byte { return v.appendText(dst, false) }

// String is jsonb_out's text of v.
func (v *Value) String() string { return string(v.AppendText(nil)) }

// AppendEqualityKey appends a text equal for two values exactly when
// jsonb's = holds between them: jsonb_out's, with numbers printed without
// trailing fraction zeros (1.0 = 1).
func (v *Value) AppendEqualityKey(dst []byte) []byte { return v.appendText(dst, true) }

func (v *Value) appendText(dst []byte, equality bool) []byte {
	switch v.Kind {
	case Object:
		dst = append(dst, '{')
		for i, k := range v.Keys {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendString(dst, k)
			dst = append(dst, ": "...)
			dst = v.Items[i].appendText(dst, equality)
		}
		return append(dst, '}')
	case Array:
		dst = append(dst, '[')
		for i, it := range v.Items {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = it.appendText(dst, equality)
		}
		return append(dst, ']')
	case String:
		return appendString(dst, v.Str)
	case Number:
		if !equality {
			return append(dst, v.Str...)
		}
		t := v.Str
		if strings.Contains(t, ".") {
			t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
		}
		if t == "-0" {
			t = "0"
		}
		return append(dst, t...)
	case Bool:
		if v.True {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	}
	return append(dst, "null"...)
}

// appendString is escape_json.
func appendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			} else {
				dst = append(dst, c)
			}
		}
	}
	return append(dst, '"')
}
