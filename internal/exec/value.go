package exec

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

// Kind is the type family of a computed value.
type Kind int

const (
	KindInt Kind = iota
	KindNumeric
	KindText
	KindDate
	KindBool
	KindUUID
	KindFloat     // double precision: IEEE bits in i
	KindTime      // time: microseconds in i
	KindTimestamp // timestamp, timestamptz: microseconds since 2000-01-01 (UTC) in i
	KindInet      // inet: its stored bytes in s
	KindInterval  // interval: its stored bytes in s
	KindJSONB     // jsonb: jsonb_out's text in s (pgjson computes with it)
	// KindTextArray is text[]: array_send's form in s; only the jsonb
	// operators taking a text[] (#>, ?|, ?&) read it.
	KindTextArray
	KindBytea // bytea: its bytes in s
)

// Value is a computed value: of type t (onion.Type, for output), NULL, or
// an integer/day/boolean in i, text (or a uuid's 16 bytes) in s, numeric
// in d.
type Value struct {
	Type onion.Type
	Null bool
	Int  int64
	Str  string
	Num  Decimal
}

func KindOf(t onion.Type) (Kind, error) {
	switch t.Base {
	case onion.SmallInt, onion.Integer, onion.BigInt:
		return KindInt, nil
	case onion.Numeric:
		return KindNumeric, nil
	case onion.Text, onion.Varchar, onion.Char:
		return KindText, nil
	case onion.Date:
		return KindDate, nil
	case onion.Boolean:
		return KindBool, nil
	case onion.UUID:
		return KindUUID, nil
	case onion.Float8:
		return KindFloat, nil
	case onion.Time:
		return KindTime, nil
	case onion.Timestamp, onion.Timestamptz:
		return KindTimestamp, nil
	case onion.Inet, onion.Cidr:
		return KindInet, nil
	case onion.Interval:
		return KindInterval, nil
	case onion.JSONB:
		return KindJSONB, nil
	case onion.Bytea:
		return KindBytea, nil
	case onion.Array:
		if t.Elem == onion.Text || t.Elem == onion.Varchar {
			return KindTextArray, nil
		}
	}
	return 0, rewrite.Refusal("values of type %s cannot be computed by the proxy yet", t)
}

var (
	TypeInt4    = onion.Type{Base: onion.Integer}
	TypeInt8    = onion.Type{Base: onion.BigInt}
	TypeNumeric = onion.Type{Base: onion.Numeric}
	TypeText    = onion.Type{Base: onion.Text}
	TypeBool    = onion.Type{Base: onion.Boolean}
	TypeDate    = onion.Type{Base: onion.Date}
	TypeFloat8  = onion.Type{Base: onion.Float8}
	// TypeTextArray is text[].
	TypeTextArray = onion.Type{Base: onion.Array, Elem: onion.Text}
)

func NullOf(t onion.Type) Value { return Value{Type: t, Null: true} }

// FromOnion converts a decrypted value of type t.
func FromOnion(t onion.Type, v onion.Value, env onion.Env) (Value, error) {
	k, err := KindOf(t)
	if err != nil {
		return Value{}, err
	}
	if v.IsNull() {
		return NullOf(t), nil
	}
	out := Value{Type: t}
	switch k {
	case KindInt, KindDate, KindFloat, KindTime, KindTimestamp:
		out.Int = v.Int64()
	case KindBool:
		out.Int = v.Int64()
	case KindText, KindUUID, KindInet, KindInterval, KindJSONB, KindTextArray, KindBytea:
		out.Str = string(v.Bytes())
	case KindNumeric:
		if neg, digits, scale, ok := v.NumericCoefficient(); ok {
			out.Num, err = pgnumeric.FromCoefficient(neg, digits, int(scale))
		} else {
			out.Num, err = parseDecimal(string(t.AppendText(nil, v, env)))
		}
		if err != nil {
			return Value{}, err
		}
	}
	return out, nil
}

// ToOnion converts a computed value for output as type t.
func (a Value) ToOnion(env onion.Env) (onion.Value, error) {
	if a.Null {
		return onion.Null(), nil
	}
	k, _ := KindOf(a.Type)
	switch k {
	case KindInt:
		return onion.IntValue(a.Int), nil
	case KindDate:
		return onion.DateValue(int32(a.Int)), nil
	case KindBool:
		return onion.BoolValue(a.Int != 0), nil
	case KindText, KindJSONB:
		return onion.TextValue(a.Str), nil
	case KindUUID, KindInet, KindInterval, KindTextArray, KindBytea:
		return onion.BytesValue([]byte(a.Str)), nil
	case KindFloat, KindTime, KindTimestamp:
		return onion.IntValue(a.Int), nil
	}
	return a.Type.ParseText([]byte(a.Num.String()), env)
}

// constValue reads a constant as type t (for an unknown-typed literal met
// with a typed operand) or as its own type.
func constValue(e *ir.Expr, want *onion.Type, env onion.Env) (Value, error) {
	t := TypeText
	switch e.ConstType {
	case "", "text", "varchar", "bpchar", "char":
		if e.ConstType == "" && want != nil {
			t = *want
		}
	case "int", "int2", "smallint":
		t = TypeInt4 // an integer literal of any width computes as int4
	case "text[]":
		t = TypeTextArray
	default:
		ct, err := onion.TypeFromNames([]string{e.ConstType}, nil)
		if err != nil {
			return Value{}, rewrite.Refusal("constants of type %s are not supported in a query the proxy computes", e.ConstType)
		}
		t = ct
	}
	if e.Const == nil {
		return NullOf(t), nil
	}
	if t.Base == onion.Char {
		t = TypeText // compared without padding
	}
	v, err := t.ParseText([]byte(*e.Const), env)
	if err != nil {
		return Value{}, err
	}
	return FromOnion(t, v, env)
}

// IntRange checks an integer result against its type.
func IntRange(t onion.Type, x int64, overflow bool) (Value, error) {
	lo, hi, name := int64(-1<<63), int64(1<<63-1), "bigint"
	switch t.Base {
	case onion.SmallInt:
		lo, hi, name = -1<<15, 1<<15-1, "smallint"
	case onion.Integer:
		lo, hi, name = -1<<31, 1<<31-1, "integer"
	}
	if overflow || x < lo || x > hi {
		return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: name + " out of range"}
	}
	return Value{Type: t, Int: x}, nil
}

// widerInt is the result type of integer arithmetic.
func widerInt(a, b onion.Type) onion.Type {
	rank := map[onion.Base]int{onion.SmallInt: 0, onion.Integer: 1, onion.BigInt: 2}
	if rank[a.Base] >= rank[b.Base] {
		return onion.Type{Base: a.Base}
	}
	return onion.Type{Base: b.Base}
}

// Numeric is a non-NULL integer or numeric value as numeric.
func (a Value) Numeric() Decimal {
	k, _ := KindOf(a.Type)
	if k == KindInt {
		return decimalFromInt(a.Int)
	}
	return a.Num
}

// float8Bits is a non-NULL float8, integer or numeric value as double
// precision bits, cast as PostgreSQL casts (rounded to nearest).
func (a Value) float8Bits() int64 {
	k, _ := KindOf(a.Type)
	switch k {
	case KindFloat:
		return a.Int
	case KindInt:
		return int64(math.Float64bits(float64(a.Int)))
	}
	f, err := strconv.ParseFloat(a.Num.String(), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		f = math.NaN()
	}
	return int64(math.Float64bits(f))
}

// arith computes a op b (+ - * /).
func arith(op string, a, b Value) (Value, error) {
	ka, _ := KindOf(a.Type)
	kb, _ := KindOf(b.Type)
	switch {
	case ka == KindInt && kb == KindInt:
		t := widerInt(a.Type, b.Type)
		if a.Null || b.Null {
			return NullOf(t), nil
		}
		x, y := a.Int, b.Int
		switch op {
		case "+":
			r := x + y
			return IntRange(t, r, (x > 0 && y > 0 && r < 0) || (x < 0 && y < 0 && r >= 0))
		case "-":
			r := x - y
			return IntRange(t, r, (x >= 0 && y < 0 && r < 0) || (x < 0 && y > 0 && r >= 0))
		case "*":
			r := x * y
			return IntRange(t, r, x != 0 && (r/x != y || (x == -1 && y == -1<<63)))
		case "/":
			if y == 0 {
				return Value{}, errDivisionByZero
			}
			if x == -1<<63 && y == -1 {
				return IntRange(t, 0, true)
			}
			return IntRange(t, x/y, false)
		case "#": // int4xor, int8xor ...
			return Value{Type: t, Int: x ^ y}, nil
		case "&":
			return Value{Type: t, Int: x & y}, nil
		case "|":
			return Value{Type: t, Int: x | y}, nil
		}
	case op == "#" || op == "&" || op == "|":
		// Integers only (below).
	case (ka == KindInt || ka == KindNumeric) && (kb == KindInt || kb == KindNumeric):
		if a.Null || b.Null {
			return NullOf(TypeNumeric), nil
		}
		x, y := a.Numeric(), b.Numeric()
		out := Value{Type: TypeNumeric}
		var err error
		switch op {
		case "+":
			out.Num, err = x.Add(y)
		case "-":
			out.Num, err = x.Sub(y)
		case "*":
			out.Num, err = x.Mul(y)
		case "/":
			out.Num, err = x.Div(y)
		}
		return out, err
	case ka == KindText && kb == KindText && op == "||":
		// textcat: character(n) is cast to text, losing its trailing
		// blanks.
		if a.Null || b.Null {
			return NullOf(TypeText), nil
		}
		return Value{Type: TypeText, Str: str(a) + str(b)}, nil
	case (ka == KindFloat || kb == KindFloat) && (ka == KindFloat || ka == KindInt || ka == KindNumeric) && (kb == KindFloat || kb == KindInt || kb == KindNumeric):
		// The other operand is cast to double precision (implicitly).
		if a.Null || b.Null {
			return NullOf(TypeFloat8), nil
		}
		return float8Arith(op, math.Float64frombits(uint64(a.float8Bits())), math.Float64frombits(uint64(b.float8Bits())))
	case ka == KindDate && kb == KindDate && op == "-":
		if a.Null || b.Null {
			return NullOf(TypeInt4), nil
		}
		return Value{Type: TypeInt4, Int: a.Int - b.Int}, nil
	case ka == KindDate && kb == KindInt && (op == "+" || op == "-"):
		if b.Type.Base == onion.BigInt {
			// PostgreSQL has date ± integer, not bigint.
			return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "42883", Message: "operator does not exist: date " + op + " bigint",
				Hint: "No operator matches the given name and argument types. You might need to add explicit type casts."}
		}
		if a.Null || b.Null {
			return NullOf(TypeDate), nil
		}
		if op == "-" {
			return Value{Type: TypeDate, Int: a.Int - b.Int}, nil
		}
		return Value{Type: TypeDate, Int: a.Int + b.Int}, nil
	}
	return Value{}, rewrite.Refusal("operator %s between %s and %s is not supported in a query the proxy computes", op, a.Type, b.Type)
}

// float8Arith is PostgreSQL's float8pl, float8mi, float8mul and
// float8div: IEEE arithmetic, with an error where a finite result
// overflows or a non-zero one underflows to zero.
func float8Arith(op string, x, y float64) (Value, error) {
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
			return Value{}, overflow
		}
	case "*":
		r = x * y
		if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
			return Value{}, overflow
		}
		if r == 0 && x != 0 && y != 0 {
			return Value{}, underflow
		}
	case "/":
		if y == 0 && !math.IsNaN(x) {
			return Value{}, errDivisionByZero
		}
		r = x / y
		if math.IsInf(r, 0) && !math.IsInf(x, 0) {
			return Value{}, overflow
		}
		if r == 0 && x != 0 && !math.IsInf(y, 0) {
			return Value{}, underflow
		}
	default:
		return Value{}, rewrite.Refusal("operator %s between double precision values is not supported in a query the proxy computes", op)
	}
	return Value{Type: TypeFloat8, Int: int64(math.Float64bits(r))}, nil
}

// caseMap is lower(s) or upper(s) under the database's LC_CTYPE ctype
// (pglocale: ASCII letters only under C). The result is text.
func caseMap(fn, ctype string, a Value) (Value, error) {
	if k, _ := KindOf(a.Type); k != KindText {
		return Value{}, rewrite.Refusal("%s of a value of type %s is not supported in a query the proxy computes", fn, a.Type)
	}
	if a.Null {
		return NullOf(TypeText), nil
	}
	s := a.Str
	if a.Type.Base == onion.Char {
		s = strings.TrimRight(s, " ") // bpchar to text drops its blanks
	}
	var err error
	if fn == "upper" {
		s, err = pglocale.Upper(ctype, s)
	} else {
		s, err = pglocale.Lower(ctype, s)
	}
	if err != nil {
		return Value{}, ctypeRefusal(fn, ctype, err)
	}
	return Value{Type: TypeText, Str: s}, nil
}

// ctypeRefusal refuses mapping case in the proxy when its C library
// lacks the database's LC_CTYPE.
func ctypeRefusal(what, ctype string, err error) error {
	return rewrite.Refuse(fmt.Sprintf("%s is not supported in a query the proxy computes: the database's LC_CTYPE is %q, which the proxy's C library does not have", what, ctype),
		err.Error(), "Install the locale on the proxy's machine (the same C library release as the server's).")
}

// Compare orders two non-NULL values of comparable types.
func Compare(a, b Value) (int, error) {
	ka, _ := KindOf(a.Type)
	kb, _ := KindOf(b.Type)
	switch {
	case (ka == KindInt || ka == KindNumeric) && (kb == KindInt || kb == KindNumeric):
		if ka == KindInt && kb == KindInt {
			return cmpInt(a.Int, b.Int), nil
		}
		return a.Numeric().Cmp(b.Numeric()), nil
	case ka == KindText && kb == KindText:
		x, y := a.Str, b.Str
		if a.Type.Base == onion.Char || b.Type.Base == onion.Char {
			x, y = strings.TrimRight(x, " "), strings.TrimRight(y, " ")
		}
		return strings.Compare(x, y), nil
	case ka == kb && (ka == KindDate || ka == KindBool || ka == KindTime):
		return cmpInt(a.Int, b.Int), nil
	case ka == KindTimestamp && kb == KindTimestamp && a.Type.Base == b.Type.Base:
		// timestamp with timestamptz would convert in the session's
		// time zone: not mixed here.
		return cmpInt(a.Int, b.Int), nil
	case ka == KindUUID && kb == KindUUID, ka == KindBytea && kb == KindBytea:
		return strings.Compare(a.Str, b.Str), nil // uuid_cmp and byteacmp are memcmp, then length
	case ka == KindJSONB && kb == KindJSONB:
		x, err := jsonOf(a)
		if err != nil {
			return 0, err
		}
		y, err := jsonOf(b)
		if err != nil {
			return 0, err
		}
		return pgjson.Compare(x, y), nil
	case ka == KindInterval && kb == KindInterval:
		return a.Type.Compare(onion.BytesValue([]byte(a.Str)), onion.BytesValue([]byte(b.Str))), nil // by span
	case ka == KindInet && kb == KindInet:
		return a.Type.Compare(onion.BytesValue([]byte(a.Str)), onion.BytesValue([]byte(b.Str))), nil // network_cmp
	case (ka == KindFloat || kb == KindFloat) && (ka == KindFloat || ka == KindInt || ka == KindNumeric) && (kb == KindFloat || kb == KindInt || kb == KindNumeric):
		// An integer or numeric operand is cast to double precision,
		// as PostgreSQL resolves the operator; -0 equals 0, NaN equals
		// NaN and is above every number.
		t := onion.Type{Base: onion.Float8}
		return t.Compare(onion.IntValue(a.float8Bits()), onion.IntValue(b.float8Bits())), nil
	}
	return 0, rewrite.Refusal("comparing %s with %s is not supported in a query the proxy computes", a.Type, b.Type)
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

// Text renders a value as PostgreSQL's Text output (for LIKE and keys).
func (a Value) Text(env onion.Env) string {
	v, err := a.ToOnion(env)
	if err != nil || v.IsNull() {
		return ""
	}
	return string(a.Type.AppendText(nil, v, env))
}

// substring is substring(s FROM start [FOR count]) on characters.
func substring(s Value, start Value, count *Value) (Value, error) {
	if s.Null || start.Null || count != nil && count.Null {
		return NullOf(TypeText), nil
	}
	runes := []rune(s.Str)
	from := start.Int
	to := int64(len(runes)) + 1
	if count != nil {
		if count.Int < 0 {
			return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "22011", Message: "negative substring length not allowed"}
		}
		to = from + count.Int
	}
	from = max(from, 1)
	to = min(to, int64(len(runes))+1)
	if to <= from {
		return Value{Type: TypeText, Str: ""}, nil
	}
	return Value{Type: TypeText, Str: string(runes[from-1 : to-1])}, nil
}

// KeyOf is a value's grouping key.
func (a Value) KeyOf(env onion.Env) string {
	return string(a.AppendKey(nil, env))
}

// AppendKey appends a value's grouping key (keyOf) to b.
func (a Value) AppendKey(b []byte, env onion.Env) []byte {
	if a.Null {
		return append(b, "\x00N"...)
	}
	k, _ := KindOf(a.Type)
	switch k {
	case KindNumeric:
		from := len(b)
		b = a.Num.AppendText(b)
		if !a.Num.IsFinite() {
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
	case KindText:
		b = append(b, 't')
		if a.Type.Base == onion.Char {
			return append(b, strings.TrimRight(a.Str, " ")...)
		}
		return append(b, a.Str...)
	case KindUUID:
		return append(append(b, 'u'), a.Str...)
	case KindBytea:
		return append(append(b, 'b'), a.Str...)
	case KindInet:
		return append(append(b, 'i'), a.Str...)
	case KindInterval:
		return append(append(b, 'v'), a.Type.EqualityKey(onion.BytesValue([]byte(a.Str)))...)
	case KindJSONB:
		return append(append(b, 'j'), a.Type.EqualityKey(onion.TextValue(a.Str))...)
	case KindFloat:
		return append(append(b, 'f'), a.Type.EqualityKey(onion.IntValue(a.Int))...)
	}
	return strconv.AppendInt(b, a.Int, 10)
}

// Compares reports whether a comparison result (-1, 0, 1) satisfies op.
func Compares(cmp int, op string) bool {
	switch op {
	case "<":
		return cmp < 0
	case "<=":
		return cmp <= 0
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	}
	return false
}
