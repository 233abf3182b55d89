package onion

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/pgonion/pgonion/internal/pgarray"
)

// Arrays. A column of a one-dimensional array of a supported type is
// Type{Base: Array, Elem: the element's base} with the element's
// modifiers (numeric(10,2)[], varchar(5)[]). Its value is stored as
// array_send writes it with lower bound 1; it gets an Eq onion over its
// elements' equality keys (array_eq: same length, elements equal under
// their type's =, NULL equal to NULL) and an exact copy. Multi-dimensional
// arrays and other lower bounds are refused, not misread.

// ArrayOf returns the type of one-dimensional arrays of elem.
func ArrayOf(elem Type) (Type, error) {
	if err := elem.Check(); err != nil {
		return Type{}, err
	}
	if _, ok := arrayOIDs[elem.Base]; !ok {
		return Type{}, fmt.Errorf("onion: arrays of %s are not supported for encrypted columns", elem)
	}
	return Type{Base: Array, Elem: elem.Base, Precision: elem.Precision, Scale: elem.Scale, Length: elem.Length}, nil
}

// Element returns the element type of an array type.
func (t Type) Element() Type {
	return Type{Base: t.Elem, Precision: t.Precision, Scale: t.Scale, Length: t.Length}
}

// arrayOIDs are the array types' OIDs by element base.
var arrayOIDs = map[Base]uint32{
	SmallInt: 1005, Integer: 1007, BigInt: 1016, Numeric: 1231, Text: 1009, Varchar: 1015, Char: 1014,
	Date: 1182, Timestamp: 1115, Timestamptz: 1185, Boolean: 1000, Bytea: 1001, UUID: 2951,
	Float8: 1022, Float4: 1021, Time: 1183, TimeTZ: 1270, Inet: 1041, Cidr: 651, Interval: 1187, JSONB: 3807,
}

// refuseArray refuses an array input form this package does not read.
func refuseArray(s, why string) error {
	return refuse(codeInvalidTextRep, "malformed array literal: \"%s\" (%s)", s, why)
}

// parseArrayText is array_in for a one-dimensional array without
// explicit bounds; malformed input is refused (PostgreSQL rejects it too,
// with details this package does not reproduce).
func (t Type) parseArrayText(s string, env Env) (Value, error) {
	trimmed := strings.TrimLeft(s, " \t\n\r\v\f")
	if strings.HasPrefix(trimmed, "[") {
		return Value{}, refuseArray(s, "explicit bounds")
	}
	texts, err := pgarray.ParseText(s)
	if err != nil {
		return Value{}, refuseArray(s, "not a one-dimensional array this package reads")
	}
	// Every element is read first, then the modifiers applied to each,
	// as array_in and then the assignment's coercion do.
	et := t.Element()
	bare := Type{Base: et.Base}
	for _, x := range texts {
		if x == nil {
			continue
		}
		if _, err := bare.ParseText([]byte(*x), env); err != nil {
			return Value{}, err
		}
	}
	elems := make([][]byte, len(texts))
	for i, x := range texts {
		if x == nil {
			continue
		}
		v, err := et.ParseText([]byte(*x), env)
		if err != nil {
			return Value{}, err
		}
		elems[i] = et.AppendBinary([]byte{}, v)
	}
	return BytesValue(pgarray.AppendBinary(nil, arrayElemOID(et), elems)), nil
}

// arrayElemOID is the element type's OID in array_send's header.
func arrayElemOID(et Type) uint32 { return et.OID() }

// arrayElements decodes a stored array: its elements' binary forms, nil
// for NULL.
func arrayElements(v Value) [][]byte {
	_, elems, _, err := pgarray.DecodeBinary([]byte(v.s))
	if err != nil {
		panic("onion: invalid stored array: " + err.Error())
	}
	return elems
}

// ArrayElements returns the elements of array v of type t (NULL elements
// as NULL values).
func (t Type) ArrayElements(v Value) ([]Value, error) {
	if t.Base != Array {
		return nil, fmt.Errorf("onion: %s is not an array type", t.BaseName())
	}
	et := t.Element()
	bins := arrayElements(v)
	out := make([]Value, len(bins))
	for i, b := range bins {
		if b == nil {
			out[i] = Null()
			continue
		}
		ev, err := et.ParseBinary(b)
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}

// parseArrayBinary is array_recv for a one-dimensional array with lower
// bound 1 (other shapes are refused).
func (t Type) parseArrayBinary(b []byte) (Value, error) {
	elemOID, elems, dims, err := pgarray.DecodeBinary(b)
	if err != nil {
		return Value{}, err
	}
	et := t.Element()
	switch {
	case len(dims) > 1:
		return Value{}, refuse(codeFeatureNotSupported, "multi-dimensional arrays are not supported for encrypted columns")
	case len(dims) == 1 && binary.BigEndian.Uint32(b[16:]) != 1:
		return Value{}, refuse(codeFeatureNotSupported, "arrays with a lower bound other than 1 are not supported for encrypted columns")
	case elemOID != et.OID():
		return Value{}, pgErr("42804", "binary data has array element type %d instead of expected %d (%s)", elemOID, et.OID(), et.baseName())
	}
	out := make([][]byte, len(elems))
	for i, e := range elems {
		if e == nil {
			continue
		}
		v, err := et.ParseBinary(e)
		if err != nil {
			if pe, ok := err.(interface{ SQLState() string }); ok && pe.SQLState() == codeInvalidBinaryRep {
				return Value{}, pgErr(codeInvalidBinaryRep, "improper binary format in array element %d", i+1)
			}
			return Value{}, err
		}
		out[i] = et.AppendBinary([]byte{}, v)
	}
	return BytesValue(pgarray.AppendBinary(nil, et.OID(), out)), nil
}

// appendArrayText is array_out: {e1,e2,...}, an element quoted when it is
// empty, NULL in any case, or holds a quote, backslash, brace, comma or
// white space; NULL elements as NULL.
func (t Type) appendArrayText(dst []byte, v Value, env Env) []byte {
	et := t.Element()
	dst = append(dst, '{')
	for i, e := range arrayElements(v) {
		if i > 0 {
			dst = append(dst, ',')
		}
		if e == nil {
			dst = append(dst, "NULL"...)
			continue
		}
		ev, err := et.ParseBinary(e)
		if err != nil {
			panic("onion: invalid stored array element: " + err.Error())
		}
		text := et.AppendText(nil, ev, env)
		if !arrayNeedsQuotes(text) {
			dst = append(dst, text...)
			continue
		}
		dst = append(dst, '"')
		for _, c := range text {
			if c == '"' || c == '\\' {
				dst = append(dst, '\\')
			}
			dst = append(dst, c)
		}
		dst = append(dst, '"')
	}
	return append(dst, '}')
}

func arrayNeedsQuotes(text []byte) bool {
	if len(text) == 0 || bytes.EqualFold(text, []byte("NULL")) {
		return true
	}
	return bytes.ContainsAny(text, "\"\\{},") || bytes.ContainsAny(text, " \t\n\r\v\f")
}

// validArray reports whether v is a stored array of t: one dimension with
// lower bound 1 (or none), t's element type, valid elements in their
// canonical binary form.
func (t Type) validArray(v Value) bool {
	if v.kind != kindBytes {
		return false
	}
	w, err := t.parseArrayBinary([]byte(v.s))
	return err == nil && w == v
}

// arrayKey is the EqualityKey of an array: its length, then for each
// element a NULL marker or its element key, length-prefixed.
func (t Type) arrayKey(v Value) []byte {
	et := t.Element()
	elems := arrayElements(v)
	k := binary.BigEndian.AppendUint32(nil, uint32(len(elems)))
	for _, e := range elems {
		if e == nil {
			k = append(k, 0xff)
			continue
		}
		ev, _ := et.ParseBinary(e)
		ek := et.EqualityKey(ev)
		k = binary.BigEndian.AppendUint32(append(k, 0), uint32(len(ek)))
		k = append(k, ek...)
	}
	return k
}

// compareArrays is array_cmp for one-dimensional arrays: element by
// element (NULL above every value, equal to NULL), then the shorter
// first.
func (t Type) compareArrays(a, b Value) int {
	et := t.Element()
	ea, eb := arrayElements(a), arrayElements(b)
	for i := 0; i < len(ea) && i < len(eb); i++ {
		switch {
		case ea[i] == nil && eb[i] == nil:
			continue
		case ea[i] == nil:
			return 1
		case eb[i] == nil:
			return -1
		}
		x, _ := et.ParseBinary(ea[i])
		y, _ := et.ParseBinary(eb[i])
		if c := et.Compare(x, y); c != 0 {
			return c
		}
	}
	switch {
	case len(ea) < len(eb):
		return -1
	case len(ea) > len(eb):
		return 1
	}
	return 0
}
