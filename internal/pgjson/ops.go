package pgjson

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgnumeric"
)

// Field is v -> key (jsonb_object_field): the value of key when v is an
// object, nil (SQL NULL) otherwise.
func (v *Value) Field(key string) *Value {
	if v.Kind != Object {
		return nil
	}
	return v.field(key)
}

// Element is v -> i (jsonb_array_element): the i-th element (from 0; a
// negative i counts from the end) when v is an array, nil for an object.
// A scalar is read as the one-element array jsonb stores it as.
func (v *Value) Element(i int64) *Value {
	if v.Kind == Object {
		return nil
	}
	items := v.Items
	if v.IsScalar() {
		items = []*Value{v}
	}
	n := int64(len(items))
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return nil
	}
	return items[i]
}

// Path is v #> path (jsonb_extract_path): each step a key of an object or
// an integer index of an array; nil when a step finds nothing. An empty
// path is v itself.
func (v *Value) Path(path []string) *Value {
	cur := v
	for _, step := range path {
		switch cur.Kind {
		case Object:
			cur = cur.field(step)
		case Array:
			i, ok := pathIndex(step)
			if !ok {
				return nil
			}
			cur = cur.Element(i)
		default: // a scalar has no steps (unlike ->)
			return nil
		}
		if cur == nil {
			return nil
		}
	}
	return cur
}

// pathIndex reads an array step of a path as strtol does for
// jsonb_get_element: optional blanks and sign, digits, nothing after.
func pathIndex(s string) (int64, bool) {
	t := strings.TrimLeft(s, " \t\n\r\f\v")
	if t == "" {
		return 0, false
	}
	i, err := strconv.ParseInt(t, 10, 32)
	if err != nil {
		return 0, false
	}
	return i, true
}

// Text is v's value as ->> returns it: a string's text, a scalar's
// output, a container's jsonb text; ok is false for null (SQL NULL).
func (v *Value) Text() (string, bool) {
	switch v.Kind {
	case Null:
		return "", false
	case String:
		return v.Str, true
	}
	return v.String(), true
}

// Exists is v ? key (jsonb_exists): key is a key of object v, or a string
// element of array v, or v is that string.
func (v *Value) Exists(key string) bool {
	switch v.Kind {
	case Object:
		return v.field(key) != nil
	case Array:
		for _, it := range v.Items {
			if it.Kind == String && it.Str == key {
				return true
			}
		}
		return false
	case String:
		return v.Str == key
	}
	return false
}

// ExistsAny is v ?| keys; NULL keys (nil) are skipped.
func (v *Value) ExistsAny(keys []*string) bool {
	for _, k := range keys {
		if k != nil && v.Exists(*k) {
			return true
		}
	}
	return false
}

// ExistsAll is v ?& keys; NULL keys (nil) are skipped.
func (v *Value) ExistsAll(keys []*string) bool {
	for _, k := range keys {
		if k != nil && !v.Exists(*k) {
			return false
		}
	}
	return true
}

// Contains is v @> w (jsonb_contains).
func (v *Value) Contains(w *Value) bool {
	if (v.Kind == Object) != (w.Kind == Object) {
		return false
	}
	return deepContains(rootOf(v), rootOf(w))
}

// root is a top-level value as jsonb stores it: a scalar as a one-element
// array marked raw.
type root struct {
	v   *Value
	raw bool
}

func rootOf(v *Value) root {
	if v.IsScalar() {
		return root{v: &Value{Kind: Array, Items: []*Value{v}}, raw: true}
	}
	return root{v: v}
}

// deepContains is JsonbDeepContains over two containers of one kind.
func deepContains(a, b root) bool {
	if a.v.Kind == Object {
		if len(b.v.Keys) > len(a.v.Keys) {
			return false
		}
		for i, k := range b.v.Keys {
			av := a.v.field(k)
			if av == nil {
				return false
			}
			bv := b.v.Items[i]
			switch {
			case bv.IsScalar():
				if !av.IsScalar() || !scalarEqual(av, bv) {
					return false
				}
			case av.Kind != bv.Kind:
				return false
			default:
				if !deepContains(root{v: av}, root{v: bv}) {
					return false
				}
			}
		}
		return true
	}
	if a.raw && !b.raw {
		return false // a scalar contains no array
	}
	var containers []*Value
	for _, it := range a.v.Items {
		if !it.IsScalar() {
			containers = append(containers, it)
		}
	}
	for _, bv := range b.v.Items {
		found := false
		if bv.IsScalar() {
			for _, it := range a.v.Items {
				if it.IsScalar() && scalarEqual(it, bv) {
					found = true
					break
				}
			}
		} else {
			for _, c := range containers {
				if c.Kind == bv.Kind && deepContains(root{v: c}, root{v: bv}) {
					found = true
					break
				}
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// scalarEqual is equalsJsonbScalarValue: same kind and equal value.
func scalarEqual(a, b *Value) bool {
	if a.Kind != b.Kind {
		return false
	}
	return compareScalars(a, b) == 0
}

// compareScalars is compareJsonbScalarValue for two scalars of one kind:
// strings by bytes, numbers as numerics, false before true.
func compareScalars(a, b *Value) int {
	switch a.Kind {
	case String:
		return strings.Compare(a.Str, b.Str)
	case Number:
		return a.Num.Cmp(b.Num)
	case Bool:
		switch {
		case a.True == b.True:
			return 0
		case b.True:
			return -1
		}
		return 1
	}
	return 0
}

// Compare is jsonb's B-tree order (compareJsonbContainers): objects above
// arrays above booleans above numbers above strings above null; an object
// with more pairs above one with fewer, an array with more elements above
// one with fewer, then pair by pair (key, value) or element by element; a
// top-level scalar below a top-level array of one element (and so,
// anomalously, an empty top-level array below every top-level scalar).
func Compare(a, b *Value) int {
	return compareRoots(rootOf(a), rootOf(b))
}

func compareRoots(a, b root) int {
	if a.v.Kind != b.v.Kind {
		return cmpKind(a.v.Kind, b.v.Kind)
	}
	res := 0
	if a.v.Kind == Array {
		if a.raw != b.raw {
			res = 1
			if a.raw {
				res = -1
			}
		}
		if len(a.v.Items) != len(b.v.Items) {
			res = cmpInt(len(a.v.Items), len(b.v.Items))
		}
		if res != 0 {
			return res
		}
		for i := range a.v.Items {
			if c := compareNested(a.v.Items[i], b.v.Items[i]); c != 0 {
				return c
			}
		}
		return 0
	}
	if len(a.v.Keys) != len(b.v.Keys) {
		return cmpInt(len(a.v.Keys), len(b.v.Keys))
	}
	for i := range a.v.Keys {
		if c := strings.Compare(a.v.Keys[i], b.v.Keys[i]); c != 0 {
			return c
		}
		if c := compareNested(a.v.Items[i], b.v.Items[i]); c != 0 {
			return c
		}
	}
	return 0
}

// compareNested compares two values inside containers.
func compareNested(a, b *Value) int {
	if a.Kind != b.Kind {
		return cmpKind(a.Kind, b.Kind)
	}
	if a.IsScalar() {
		return compareScalars(a, b)
	}
	return compareRoots(root{v: a}, root{v: b})
}

func cmpKind(a, b Kind) int {
	if a > b {
		return 1
	}
	return -1
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// kindName is the type name in jsonb's cast errors (JsonbTypeName).
func (k Kind) kindName() string {
	return [...]string{"null", "string", "numeric", "boolean", "array", "object"}[k]
}

// errCast is the error of a cast of a jsonb value of the wrong kind to
// SQL type typ (cannotCastJsonbValue).
func errCast(k Kind, typ string) error {
	return &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "22023",
		Message: fmt.Sprintf("cannot cast jsonb %s to type %s", k.kindName(), typ)}
}

// Numeric is v::numeric: v must be a number (typ names the cast's target
// in the error, for the integer and float casts that go through it).
func (v *Value) Numeric(typ string) (pgnumeric.Decimal, error) {
	if v.Kind != Number {
		return pgnumeric.Decimal{}, errCast(v.Kind, typ)
	}
	return v.Num, nil
}

// Boolean is v::boolean: v must be a boolean.
func (v *Value) Boolean() (bool, error) {
	if v.Kind != Bool {
		return false, errCast(v.Kind, "boolean")
	}
	return v.True, nil
}
