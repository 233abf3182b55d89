package engine

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgjson"
	"github.com/pgonion/pgonion/internal/pglocale"
	"github.com/pgonion/pgonion/internal/pgnumeric"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// This file evaluates the expressions of split execution
// (rewrite.AggPlan) on decrypted values, with PostgreSQL's types: integer
// types (overflow checked), numeric (decimal), text, date, boolean; uuid,
// inet, interval, double precision, time, timestamp and timestamptz are
// compared, grouped and sorted only.

// kind is the type family of a computed value.
type kind int

const (
	kInt kind = iota
	kNumeric
	kText
	kDate
	kBool
	kUUID
	kFloat // double precision: IEEE bits in i
	kTime  // time: microseconds in i
	kTs    // timestamp, timestamptz: microseconds since 2000-01-01 (UTC) in i
	kInet  // inet: its stored bytes in s
	kIntv  // interval: its stored bytes in s
	kJSONB // jsonb: jsonb_out's text in s (pgjson computes with it)
	// kTextArray is text[]: array_send's form in s; only the jsonb
	// operators taking a text[] (#>, ?|, ?&) read it.
	kTextArray
	kBytea // bytea: its bytes in s
)

// aval is a computed value: of type t (onion.Type, for output), NULL, or
// an integer/day/boolean in i, text (or a uuid's 16 bytes) in s, numeric
// in d.
type aval struct {
	t    onion.Type
	null bool
	i    int64
	s    string
	d    decimal
}

func kindOf(t onion.Type) (kind, error) {
	switch t.Base {
	case onion.SmallInt, onion.Integer, onion.BigInt:
		return kInt, nil
	case onion.Numeric:
		return kNumeric, nil
	case onion.Text, onion.Varchar, onion.Char:
		return kText, nil
	case onion.Date:
		return kDate, nil
	case onion.Boolean:
		return kBool, nil
	case onion.UUID:
		return kUUID, nil
	case onion.Float8:
		return kFloat, nil
	case onion.Time:
		return kTime, nil
	case onion.Timestamp, onion.Timestamptz:
		return kTs, nil
	case onion.Inet, onion.Cidr:
		return kInet, nil
	case onion.Interval:
		return kIntv, nil
	case onion.JSONB:
		return kJSONB, nil
	case onion.Bytea:
		return kBytea, nil
	case onion.Array:
		if t.Elem == onion.Text || t.Elem == onion.Varchar {
			return kTextArray, nil
		}
	}
	return 0, rewrite.Refusal("values of type %s cannot be computed by the proxy yet", t)
}

var (
	tInt4    = onion.Type{Base: onion.Integer}
	tInt8    = onion.Type{Base: onion.BigInt}
	tNumeric = onion.Type{Base: onion.Numeric}
	tText    = onion.Type{Base: onion.Text}
	tBool    = onion.Type{Base: onion.Boolean}
	tDate    = onion.Type{Base: onion.Date}
	tFloat8  = onion.Type{Base: onion.Float8}
	// tTextArray is text[].
	tTextArray = onion.Type{Base: onion.Array, Elem: onion.Text}
)

func nullOf(t onion.Type) aval { return aval{t: t, null: true} }

// fromOnion converts a decrypted value of type t.
func fromOnion(t onion.Type, v onion.Value, env onion.Env) (aval, error) {
	k, err := kindOf(t)
	if err != nil {
		return aval{}, err
	}
	if v.IsNull() {
		return nullOf(t), nil
	}
	out := aval{t: t}
	switch k {
	case kInt, kDate, kFloat, kTime, kTs:
		out.i = v.Int64()
	case kBool:
		out.i = v.Int64()
	case kText, kUUID, kInet, kIntv, kJSONB, kTextArray, kBytea:
		out.s = string(v.Bytes())
	case kNumeric:
		if neg, digits, scale, ok := v.NumericCoefficient(); ok {
			out.d, err = pgnumeric.FromCoefficient(neg, digits, int(scale))
		} else {
			out.d, err = parseDecimal(string(t.AppendText(nil, v, env)))
		}
		if err != nil {
			return aval{}, err
		}
	}
	return out, nil
}

// toOnion converts a computed value for output as type t.
func (a aval) toOnion(env onion.Env) (onion.Value, error) {
	if a.null {
		return onion.Null(), nil
	}
	k, _ := kindOf(a.t)
	switch k {
	case kInt:
		return onion.IntValue(a.i), nil
	case kDate:
		return onion.DateValue(int32(a.i)), nil
	case kBool:
		return onion.BoolValue(a.i != 0), nil
	case kText, kJSONB:
		return onion.TextValue(a.s), nil
	case kUUID, kInet, kIntv, kTextArray, kBytea:
		return onion.BytesValue([]byte(a.s)), nil
	case kFloat, kTime, kTs:
		return onion.IntValue(a.i), nil
	}
	return a.t.ParseText([]byte(a.d.String()), env)
}

// constValue reads a constant as type t (for an unknown-typed literal met
// with a typed operand) or as its own type.
func constValue(e *ir.Expr, want *onion.Type, env onion.Env) (aval, error) {
	t := tText
	switch e.ConstType {
	case "", "text", "varchar", "bpchar", "char":
		if e.ConstType == "" && want != nil {
			t = *want
		}
	case "int", "int2", "smallint":
		t = tInt4 // an integer literal of any width computes as int4
	case "text[]":
		t = tTextArray
	default:
		ct, err := onion.TypeFromNames([]string{e.ConstType}, nil)
		if err != nil {
			return aval{}, rewrite.Refusal("constants of type %s are not supported in a query the proxy computes", e.ConstType)
		}
		t = ct
	}
	if e.Const == nil {
		return nullOf(t), nil
	}
	if t.Base == onion.Char {
		t = tText // compared without padding
	}
	v, err := t.ParseText([]byte(*e.Const), env)
	if err != nil {
		return aval{}, err
	}
	return fromOnion(t, v, env)
}

// intRange checks an integer result against its type.
func intRange(t onion.Type, x int64, overflow bool) (aval, error) {
	lo, hi, name := int64(-1<<63), int64(1<<63-1), "bigint"
	switch t.Base {
	case onion.SmallInt:
		lo, hi, name = -1<<15, 1<<15-1, "smallint"
	case onion.Integer:
		lo, hi, name = -1<<31, 1<<31-1, "integer"
	}
	if overflow || x < lo || x > hi {
		return aval{}, &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: name + " out of range"}
	}
	return aval{t: t, i: x}, nil
}

// widerInt is the result type of integer arithmetic.
func widerInt(a, b onion.Type) onion.Type {
	rank := map[onion.Base]int{onion.SmallInt: 0, onion.Integer: 1, onion.BigInt: 2}
	if rank[a.Base] >= rank[b.Base] {
		return onion.Type{Base: a.Base}
	}
	return onion.Type{Base: b.Base}
}

func (a aval) numeric() decimal {
	k, _ := kindOf(a.t)
	if k == kInt {
		return decimalFromInt(a.i)
	}
	return a.d
}

// float8Bits is a non-NULL float8, integer or numeric value as double
// precision bits, cast as PostgreSQL casts (rounded to nearest).
func (a aval) float8Bits() int64 {
	k, _ := kindOf(a.t)
	switch k {
	case kFloat:
		return a.i
	case kInt:
		return int64(math.Float64bits(float64(a.i)))
	}
	f, err := strconv.ParseFloat(a.d.String(), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		f = math.NaN()
	}
	return int64(math.Float64bits(f))
}

// arith computes a op b (+ - * /).
func arith(op string, a, b aval) (aval, error) {
	ka, _ := kindOf(a.t)
	kb, _ := kindOf(b.t)
	switch {
	case ka == kInt && kb == kInt:
		t := widerInt(a.t, b.t)
		if a.null || b.null {
			return nullOf(t), nil
		}
		x, y := a.i, b.i
		switch op {
		case "+":
			r := x + y
			return intRange(t, r, (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0))
		case "-":
			r := x - y
			return intRange(t, r, (x >= 0 && y < 0 && r < 0) || (x < 0 && y > 0 && r >= 0))
		case "*":
			r := x * y
			return intRange(t, r, x != 0 && (r/x != y || (x == -1 && y == -1<<63)))
		case "/":
			if y == 0 {
				return aval{}, errDivisionByZero
			}
			if x == -1<<63 && y == -1 {
				return intRange(t, 0, true)
			}
			return intRange(t, x/y, false)
		case "#": // int4xor, int8xor ...
			return aval{t: t, i: x ^ y}, nil
		case "&":
			return aval{t: t, i: x & y}, nil
		case "|":
			return aval{t: t, i: x | y}, nil
		}
	case op == "#" || op == "&" || op == "|":
		// Integers only (below).
	case (ka == kInt || ka == kNumeric) && (kb == kInt || kb == kNumeric):
		if a.null || b.null {
			return nullOf(tNumeric), nil
		}
		x, y := a.numeric(), b.numeric()
		out := aval{t: tNumeric}
		var err error
		switch op {
		case "+":
			out.d, err = x.Add(y)
		case "-":
			out.d, err = x.Sub(y)
		case "*":
			out.d, err = x.Mul(y)
		case "/":
			out.d, err = x.Div(y)
		}
		return out, err
	case ka == kText && kb == kText && op == "||":
		// textcat: character(n) is cast to text, losing its trailing
		// blanks.
		if a.null || b.null {
			return nullOf(tText), nil
		}
		return aval{t: tText, s: str(a) + str(b)}, nil
	case (ka == kFloat || kb == kFloat) && (ka == kFloat || ka == kInt || ka == kNumeric) && (kb == kFloat || kb == kInt || kb == kNumeric):
		// The other operand is cast to double precision (implicitly).
		if a.null || b.null {
			return nullOf(tFloat8), nil
		}
		return float8Arith(op, math.Float64frombits(uint64(a.float8Bits())), math.Float64frombits(uint64(b.float8Bits())))
	case ka == kDate && kb == kDate && op == "-":
		if a.null || b.null {
			return nullOf(tInt4), nil
		}
		return aval{t: tInt4, i: a.i - b.i}, nil
	case ka == kDate && kb == kInt && (op == "+" || op == "-"):
		if b.t.Base == onion.BigInt {
			// PostgreSQL has date ± integer, not bigint.
			return aval{}, &pgconn.PgError{Severity: "ERROR", Code: "42883", Message: "operator does not exist: date " + op + " bigint",
				Hint: "No operator matches the given name and argument types. You might need to add explicit type casts."}
		}
		if a.null || b.null {
			return nullOf(tDate), nil
		}
		if op == "-" {
			return aval{t: tDate, i: a.i - b.i}, nil
		}
		return aval{t: tDate, i: a.i + b.i}, nil
	}
	return aval{}, rewrite.Refusal("operator %s between %s and %s is not supported in a query the proxy computes", op, a.t, b.t)
}

// float8Arith is PostgreSQL's float8pl, float8mi, float8mul and
// float8div: IEEE arithmetic, with an error where a finite result
// overflows or a non-zero one underflows to zero.
func float8Arith(op string, x, y float64) (aval, error) {
	overflow := &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "value out of range: overflow"}
	underflow := &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "value out of range: underflow"}
	var r float64
	switch op {
	case "+", "-":
		r = x + y
		if op == "-" {
			r = x - y
		}
		if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
			return aval{}, overflow
		}
	case "*":
		r = x * y
		if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
			return aval{}, overflow
		}
		if r == 0 && x != 0 && y != 0 {
			return aval{}, underflow
		}
	case "/":
		if y == 0 && !math.IsNaN(x) {
			return aval{}, errDivisionByZero
		}
		r = x / y
		if math.IsInf(r, 0) && !math.IsInf(x, 0) {
			return aval{}, overflow
		}
		if r == 0 && x != 0 && !math.IsInf(y, 0) {
			return aval{}, underflow
		}
	default:
		return aval{}, rewrite.Refusal("operator %s between double precision values is not supported in a query the proxy computes", op)
	}
	return aval{t: tFloat8, i: int64(math.Float64bits(r))}, nil
}

// caseMap is lower(s) or upper(s) under the database's LC_CTYPE ctype
// (pglocale: ASCII letters only under C). The result is text.
func caseMap(fn, ctype string, a aval) (aval, error) {
	if k, _ := kindOf(a.t); k != kText {
		return aval{}, rewrite.Refusal("%s of a value of type %s is not supported in a query the proxy computes", fn, a.t)
	}
	if a.null {
		return nullOf(tText), nil
	}
	s := a.s
	if a.t.Base == onion.Char {
		s = strings.TrimRight(s, " ") // bpchar to text drops its blanks
	}
	var err error
	if fn == "upper" {
		s, err = pglocale.Upper(ctype, s)
	} else {
		s, err = pglocale.Lower(ctype, s)
	}
	if err != nil {
		return aval{}, ctypeRefusal(fn, ctype, err)
	}
	return aval{t: tText, s: s}, nil
}

// ctypeRefusal refuses mapping case in the proxy when its C library
// lacks the database's LC_CTYPE.
func ctypeRefusal(what, ctype string, err error) error {
	return rewrite.Refuse(fmt.Sprintf("%s is not supported in a query the proxy computes: the database's LC_CTYPE is %q, which the proxy's C library does not have", what, ctype),
		err.Error(), "Install the locale on the proxy's machine (the same C library release as the server's).")
}

// compare orders two non-NULL values of comparable types.
func compare(a, b aval) (int, error) {
	ka, _ := kindOf(a.t)
	kb, _ := kindOf(b.t)
	switch {
	case (ka == kInt || ka == kNumeric) && (kb == kInt || kb == kNumeric):
		if ka == kInt && kb == kInt {
			return cmpInt(a.i, b.i), nil
		}
		return a.numeric().Cmp(b.numeric()), nil
	case ka == kText && kb == kText:
		x, y := a.s, b.s
		if a.t.Base == onion.Char || b.t.Base == onion.Char {
			x, y = strings.TrimRight(x, " "), strings.TrimRight(y, " ")
		}
		return strings.Compare(x, y), nil
	case ka == kb && (ka == kDate || ka == kBool || ka == kTime):
		return cmpInt(a.i, b.i), nil
	case ka == kTs && kb == kTs && a.t.Base == b.t.Base:
		// timestamp with timestamptz would convert in the session's
		// time zone: not mixed here.
		return cmpInt(a.i, b.i), nil
	case ka == kUUID && kb == kUUID, ka == kBytea && kb == kBytea:
		return strings.Compare(a.s, b.s), nil // uuid_cmp and byteacmp are memcmp, then length
	case ka == kJSONB && kb == kJSONB:
		x, err := jsonOf(a)
		if err != nil {
			return 0, err
		}
		y, err := jsonOf(b)
		if err != nil {
			return 0, err
		}
		return pgjson.Compare(x, y), nil
	case ka == kIntv && kb == kIntv:
		return a.t.Compare(onion.BytesValue([]byte(a.s)), onion.BytesValue([]byte(b.s))), nil // by span
	case ka == kInet && kb == kInet:
		return a.t.Compare(onion.BytesValue([]byte(a.s)), onion.BytesValue([]byte(b.s))), nil // network_cmp
	case (ka == kFloat || kb == kFloat) && (ka == kFloat || ka == kInt || ka == kNumeric) && (kb == kFloat || kb == kInt || kb == kNumeric):
		// An integer or numeric operand is cast to double precision,
		// as PostgreSQL resolves the operator; -0 equals 0, NaN equals
		// NaN and is above every number.
		t := onion.Type{Base: onion.Float8}
		return t.Compare(onion.IntValue(a.float8Bits()), onion.IntValue(b.float8Bits())), nil
	}
	return 0, rewrite.Refusal("comparing %s with %s is not supported in a query the proxy computes", a.t, b.t)
}

func cmpInt(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// text renders a value as PostgreSQL's text output (for LIKE and keys).
func (a aval) text(env onion.Env) string {
	v, err := a.toOnion(env)
	if err != nil || v.IsNull() {
		return ""
	}
	return string(a.t.AppendText(nil, v, env))
}

// substring is substring(s FROM start [FOR count]) on characters.
func substring(s aval, start aval, count *aval) (aval, error) {
	if s.null || start.null || count != nil && count.null {
		return nullOf(tText), nil
	}
	runes := []rune(s.s)
	from := start.i
	to := int64(len(runes)) + 1
	if count != nil {
		if count.i < 0 {
			return aval{}, &pgconn.PgError{Severity: "ERROR", Code: "22011", Message: "negative substring length not allowed"}
		}
		to = from + count.i
	}
	from = max(from, 1)
	to = min(to, int64(len(runes))+1)
	if to <= from {
		return aval{t: tText, s: ""}, nil
	}
	return aval{t: tText, s: string(runes[from-1 : to-1])}, nil
}

// keyOf is a value's grouping key.
func (a aval) keyOf(env onion.Env) string {
	return string(a.appendKey(nil, env))
}

// appendKey appends a value's grouping key (keyOf) to b.
func (a aval) appendKey(b []byte, env onion.Env) []byte {
	if a.null {
		return append(b, "\x00N"...)
	}
	k, _ := kindOf(a.t)
	switch k {
	case kNumeric:
		from := len(b)
		b = a.d.AppendText(b)
		if !a.d.IsFinite() {
			return b
		}
		// 1.0 and 1.00 group together: normalise the scale.
		if bytes.IndexByte(b[from:], '.') >= 0 {
			b = bytes.TrimRight(b, "0")
			b = bytes.TrimSuffix(b, []byte("."))
		}
		if string(b[from:]) == "-0" {
			b = append(b[:from], '0')
		}
		return b
	case kText:
		b = append(b, 't')
		if a.t.Base == onion.Char {
			return append(b, strings.TrimRight(a.s, " ")...)
		}
		return append(b, a.s...)
	case kUUID:
		return append(append(b, 'u'), a.s...)
	case kBytea:
		return append(append(b, 'b'), a.s...)
	case kInet:
		return append(append(b, 'i'), a.s...)
	case kIntv:
		return append(append(b, 'v'), a.t.EqualityKey(onion.BytesValue([]byte(a.s)))...)
	case kJSONB:
		return append(append(b, 'j'), a.t.EqualityKey(onion.TextValue(a.s))...)
	case kFloat:
		return append(append(b, 'f'), a.t.EqualityKey(onion.IntValue(a.i))...)
	}
	return strconv.AppendInt(b, a.i, 10)
}
