package exec

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pglocale"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// The proxy's scalar library: the functions it computes over decrypted
// values (split execution, checks, generated columns, read-modify-
// write), each as PostgreSQL 15 computes it in a UTF8 database under the
// C collation, errors included. A function missing here, or called with
// argument types it does not take, is refused by name (0A000), never
// approximated.
//
// Text: length, char_length, character_length, octet_length, lower,
// upper, concat, concat_ws, left, right, lpad, rpad, ltrim, rtrim, btrim,
// replace, reverse, repeat, strpos, position, split_part, starts_with,
// md5, ascii, chr, substring/substr. Comparison: coalesce, nullif,
// greatest, least. Numbers: abs, ceil, ceiling, floor, round, trunc,
// sign, mod, sqrt, power; sin, cos, tan, cot, asin, acos, atan, atan2,
// ln, log, exp, degrees, radians, pi (double precision: scalarmath.go). Dates and times (scalartime.go):
// extract and date_part of a date, timestamp or timestamptz, date_trunc,
// AT TIME ZONE. Casts between the integer types, numeric, double
// precision, boolean and int4, and from and to text. The current time
// and random values (scalarclock.go). jsonb (scalarjson.go): ->, ->>,
// #>, #>>, @>, <@, ?, ?|, ?&, casts to numeric, the integer types,
// double precision and boolean, jsonb_typeof, jsonb_build_object and
// jsonb_build_array of text, numbers, booleans, uuids and jsonb. Regular
// expressions ~ and !~ of a common subset of PostgreSQL's and Go's
// syntax (scalarregex.go).

// scalarFunc is one function of the library.
type scalarFunc struct {
	// sig types a call from its arguments' types (tUnknown for an
	// untyped literal): the types the arguments are read as, and the
	// result's; a refusal when it does not take them.
	sig func(args []onion.Type) (params []onion.Type, result onion.Type, err error)
	// call computes the function. Unless nulls is set, a NULL argument
	// makes the result NULL without a call.
	call  func(ev *Evaluator, args []Value, result onion.Type) (Value, error)
	nulls bool
	// volatile: the value is not a function of the arguments (the
	// current time, random values), so it is computed at each
	// execution, never once for a prepared statement (scalarclock.go).
	volatile bool
}

// tUnknown is the type of an untyped literal argument.
var tUnknown = onion.Type{}

// callSig is a typed call.
type callSig struct {
	fn     *scalarFunc
	params []onion.Type
	result onion.Type
}

// signature types call e (ExprFunc), cached per evaluator.
func (ev *Evaluator) signature(e *ir.Expr) (*callSig, error) {
	if s := ev.sigs[e]; s != nil {
		return s, nil
	}
	fn := scalarFuncs[e.Func]
	if e.Func == "cast" {
		fn = &castFunc
	}
	if fn == nil {
		if ev.refused == nil {
			ev.refused = e
		}
		return nil, rewrite.Refusal("function %s is not supported in a query the proxy computes", e.Func)
	}
	args := make([]onion.Type, len(e.Args))
	for i, a := range e.Args {
		if IsUnknown(a) {
			continue
		}
		t, err := ev.TypeOf(a)
		if err != nil {
			return nil, err
		}
		args[i] = t
	}
	if e.Func == "cast" {
		target, err := rewrite.CastTarget(e)
		if err != nil {
			return nil, err
		}
		args = append(args, target) // read by castSig
	}
	switch e.Func {
	case "lower", "upper":
		if err := pglocale.Check(ev.Env.CType); err != nil {
			return nil, ctypeRefusal(e.Func, ev.Env.CType, err)
		}
	}
	params, result, err := fn.sig(args)
	if err != nil {
		if ev.refused == nil {
			ev.refused = e
		}
		return nil, err
	}
	s := &callSig{fn: fn, params: params, result: result}
	if ev.sigs == nil {
		ev.sigs = map[*ir.Expr]*callSig{}
	}
	ev.sigs[e] = s
	return s, nil
}

// call evaluates call e in sc.
func (ev *Evaluator) call(e *ir.Expr, sc *Scope) (Value, error) {
	s, err := ev.signature(e)
	if err != nil {
		return Value{}, err
	}
	var buf [4]Value
	args := buf[:0]
	for i, a := range e.Args {
		var v Value
		if IsUnknown(a) {
			v, err = ev.constant(a, &s.params[i])
		} else {
			v, err = ev.Eval(a, sc)
		}
		if err != nil {
			return Value{}, err
		}
		if v.Null && !s.fn.nulls {
			return NullOf(s.result), nil
		}
		args = append(args, v)
	}
	return s.fn.call(ev, args, s.result)
}

func refuseArgs(name string, args []onion.Type) error {
	names := make([]string, len(args))
	for i, t := range args {
		names[i] = t.String()
		if t == tUnknown {
			names[i] = "unknown"
		}
	}
	return rewrite.Refusal("function %s(%s) is not supported in a query the proxy computes", name, strings.Join(names, ", "))
}

// Argument classes.
func isTextType(t onion.Type) bool { k, err := KindOf(t); return err == nil && k == KindText }
func isIntType(t onion.Type) bool  { k, err := KindOf(t); return err == nil && k == KindInt }
func isNumType(t onion.Type) bool  { k, err := KindOf(t); return err == nil && k == KindNumeric }
func isFloatType(t onion.Type) bool {
	k, err := KindOf(t)
	return err == nil && k == KindFloat
}

// fixed types a function of fixed parameters: text parameters take text
// arguments (and untyped literals), integer ones int2 or int4.
func fixed(name string, params []onion.Type, result onion.Type) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != len(params) {
			return nil, result, refuseArgs(name, args)
		}
		for i, a := range args {
			p := params[i]
			switch {
			case a == tUnknown:
			case isTextType(p) && isTextType(a):
			case p.Base == onion.Integer && (a.Base == onion.Integer || a.Base == onion.SmallInt):
			default:
				return nil, result, refuseArgs(name, args)
			}
		}
		return params, result, nil
	}
}

// str is a text argument as a text parameter reads it: character(n)
// loses its trailing blanks in the cast to text.
func str(a Value) string {
	if a.Type.Base == onion.Char {
		return strings.TrimRight(a.Str, " ")
	}
	return a.Str
}

func textVal(s string) Value  { return Value{Type: TypeText, Str: s} }
func Int4Value(i int64) Value { return Value{Type: TypeInt4, Int: i} }
func Float8Value(f float64) Value {
	return Value{Type: TypeFloat8, Int: int64(math.Float64bits(f))}
}
func (a Value) float() float64 { return math.Float64frombits(uint64(a.float8Bits())) }

// maxTextBytes is PostgreSQL's limit on a value (1 GB less its header).
const maxTextBytes = 1<<30 - 1 - 4

func lengthError() error {
	return &pgconn.PgError{Severity: "ERROR", Code: "54000", Message: "requested length too large"}
}

var scalarFuncs map[string]*scalarFunc

func init() {
	text1 := []onion.Type{TypeText}
	text2 := []onion.Type{TypeText, TypeText}
	textInt := []onion.Type{TypeText, TypeInt4}
	scalarFuncs = map[string]*scalarFunc{
		"length": {sig: fixed("length", text1, TypeInt4), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return Int4Value(int64(utf8.RuneCountInString(str(a[0])))), nil // bpcharlen ignores the padding too
		}},
		"octet_length": {sig: fixed("octet_length", text1, TypeInt4), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return Int4Value(int64(len(a[0].Str))), nil // bpcharoctetlen counts the padding
		}},
		"lower": {sig: fixed("lower", text1, TypeText), call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return caseMap("lower", ev.Env.CType, textVal(str(a[0])))
		}},
		"upper": {sig: fixed("upper", text1, TypeText), call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return caseMap("upper", ev.Env.CType, textVal(str(a[0])))
		}},
		"concat": {sig: concatSig("concat", 1), nulls: true, call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return textVal(joinValues(a, "", ev.Env)), nil
		}},
		"concat_ws": {sig: concatSig("concat_ws", 2), nulls: true, call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			if a[0].Null {
				return NullOf(TypeText), nil
			}
			return textVal(joinValues(a[1:], str(a[0]), ev.Env)), nil
		}},
		"left":  {sig: fixed("left", textInt, TypeText), call: leftRight(true)},
		"right": {sig: fixed("right", textInt, TypeText), call: leftRight(false)},
		"lpad":  {sig: optional("lpad", []onion.Type{TypeText, TypeInt4, TypeText}, 2, TypeText), call: pad(true)},
		"rpad":  {sig: optional("rpad", []onion.Type{TypeText, TypeInt4, TypeText}, 2, TypeText), call: pad(false)},
		"ltrim": {sig: optional("ltrim", text2, 1, TypeText), call: trim(true, false)},
		"rtrim": {sig: optional("rtrim", text2, 1, TypeText), call: trim(false, true)},
		"btrim": {sig: optional("btrim", text2, 1, TypeText), call: trim(true, true)},
		"replace": {sig: fixed("replace", []onion.Type{TypeText, TypeText, TypeText}, TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			if a[1].Str == "" {
				return textVal(str(a[0])), nil
			}
			return textVal(strings.ReplaceAll(str(a[0]), str(a[1]), str(a[2]))), nil
		}},
		"reverse": {sig: fixed("reverse", text1, TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			r := []rune(str(a[0]))
			for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
				r[i], r[j] = r[j], r[i]
			}
			return textVal(string(r)), nil
		}},
		"repeat": {sig: fixed("repeat", textInt, TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			s, n := str(a[0]), a[1].Int
			if n <= 0 || s == "" {
				return textVal(""), nil
			}
			if int64(len(s))*n > maxTextBytes {
				return Value{}, lengthError()
			}
			return textVal(strings.Repeat(s, int(n))), nil
		}},
		"strpos":   {sig: fixed("strpos", text2, TypeInt4), call: strpos},
		"position": {sig: fixed("position", text2, TypeInt4), call: strpos},
		"split_part": {sig: fixed("split_part", []onion.Type{TypeText, TypeText, TypeInt4}, TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			s, sep, n := str(a[0]), str(a[1]), a[2].Int
			if n == 0 {
				return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: "field position must not be zero"}
			}
			var parts []string
			if sep == "" {
				parts = []string{s} // an empty delimiter: the whole string is the only field
				if s == "" {
					parts = nil
				}
			} else {
				parts = strings.Split(s, sep)
				if s == "" {
					parts = nil
				}
			}
			if n < 0 {
				n += int64(len(parts)) + 1
			}
			if n < 1 || n > int64(len(parts)) {
				return textVal(""), nil
			}
			return textVal(parts[n-1]), nil
		}},
		"starts_with": {sig: fixed("starts_with", text2, TypeBool), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return boolVal(strings.HasPrefix(str(a[0]), str(a[1]))), nil
		}},
		"md5": {sig: fixed("md5", text1, TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			sum := md5.Sum([]byte(str(a[0])))
			return textVal(hex.EncodeToString(sum[:])), nil
		}},
		"ascii": {sig: fixed("ascii", text1, TypeInt4), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			s := str(a[0])
			if s == "" {
				return Int4Value(0), nil
			}
			r, _ := utf8.DecodeRuneInString(s)
			return Int4Value(int64(r)), nil
		}},
		"chr": {sig: fixed("chr", []onion.Type{TypeInt4}, TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			c := a[0].Int
			switch {
			case c == 0:
				return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "54000", Message: "null character not permitted"}
			case c < 0:
				return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: "character number must be positive"}
			case c > 0x10FFFF:
				return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "54000", Message: fmt.Sprintf("requested character too large for encoding: %d", c)}
			case c >= 0xD800 && c <= 0xDFFF:
				return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "54000", Message: fmt.Sprintf("requested character not valid for encoding: %d", c)}
			}
			return textVal(string(rune(c))), nil
		}},
		"substring": {sig: optional("substring", []onion.Type{TypeText, TypeInt4, TypeInt4}, 2, TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			s := textVal(str(a[0]))
			if len(a) == 3 {
				return substring(s, a[1], &a[2])
			}
			return substring(s, a[1], nil)
		}},
		"coalesce": {sig: unifying("coalesce"), nulls: true, call: func(ev *Evaluator, a []Value, t onion.Type) (Value, error) {
			for _, v := range a {
				if !v.Null {
					return ConvertTo(v, t, ev.Env)
				}
			}
			return NullOf(t), nil
		}},
		"greatest": {sig: unifying("greatest"), nulls: true, call: extreme(1)},
		"least":    {sig: unifying("least"), nulls: true, call: extreme(-1)},
		"nullif": {sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
			if len(args) != 2 {
				return nil, TypeText, refuseArgs("nullif", args)
			}
			a, b := args[0], args[1]
			switch {
			case a == tUnknown && b == tUnknown:
				a, b = TypeText, TypeText
			case a == tUnknown:
				a = b
			case b == tUnknown:
				b = a
			}
			return []onion.Type{a, b}, a, nil
		}, nulls: true, call: func(_ *Evaluator, a []Value, t onion.Type) (Value, error) {
			if a[0].Null || a[1].Null {
				return a[0], nil
			}
			c, err := Compare(a[0], a[1])
			if err != nil {
				return Value{}, err
			}
			if c == 0 {
				return NullOf(t), nil
			}
			return a[0], nil
		}},
		"abs":     {sig: numeric1("abs", false), call: abs},
		"ceil":    {sig: numeric1("ceil", true), call: roundFunc("ceil")},
		"ceiling": {sig: numeric1("ceiling", true), call: roundFunc("ceil")},
		"floor":   {sig: numeric1("floor", true), call: roundFunc("floor")},
		"round":   {sig: roundSig("round"), call: roundFunc("round")},
		"trunc":   {sig: roundSig("trunc"), call: roundFunc("trunc")},
		"sign":    {sig: numeric1("sign", true), call: sign},
		"mod":     {sig: modSig, call: mod},
		"power":   &powerFunc,
		"pow":     &powerFunc,
		"sqrt": {sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
			if len(args) == 1 && args[0].Base == onion.Numeric {
				return []onion.Type{TypeNumeric}, TypeNumeric, nil
			}
			if len(args) != 1 || !(isFloatType(args[0]) || isIntType(args[0])) {
				return nil, TypeFloat8, refuseArgs("sqrt", args)
			}
			return []onion.Type{TypeFloat8}, TypeFloat8, nil
		}, call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			if a[0].Type.Base == onion.Numeric {
				r, err := a[0].Num.SqrtNumeric()
				return Value{Type: TypeNumeric, Num: r}, err
			}
			x := a[0].float()
			if x < 0 {
				return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "2201F", Message: "cannot take square root of a negative number"}
			}
			return Float8Value(math.Sqrt(x)), nil
		}},
	}
	shl, shr := shiftFunc("<<"), shiftFunc(">>")
	scalarFuncs["<<"], scalarFuncs[">>"] = &shl, &shr
	scalarFuncs["char_length"] = scalarFuncs["length"]
	scalarFuncs["character_length"] = scalarFuncs["length"]
	scalarFuncs["substr"] = scalarFuncs["substring"]
	for name, fn := range timeFuncs() {
		scalarFuncs[name] = fn
	}
	for name, fn := range clockFuncs() {
		scalarFuncs[name] = fn
	}
	for name, fn := range jsonFuncs() {
		scalarFuncs[name] = fn
	}
	for name, fn := range mathFuncs() {
		scalarFuncs[name] = fn
	}
	for name, fn := range regexFuncs() {
		scalarFuncs[name] = fn
	}
	for name, fn := range byteFuncs() {
		scalarFuncs[name] = fn
	}
	for name, fn := range quantifiedFuncs() {
		scalarFuncs[name] = fn
	}
}

// optional types a function whose last parameters may be left out (at
// least min arguments).
func optional(name string, params []onion.Type, min int, result onion.Type) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) < min || len(args) > len(params) {
			return nil, result, refuseArgs(name, args)
		}
		return fixed(name, params[:len(args)], result)(args)
	}
}

// concatSig types concat (first 1) and concat_ws (first 2: the separator
// is text): any argument is formatted by its type's output function.
func concatSig(name string, first int) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) < first {
			return nil, TypeText, refuseArgs(name, args)
		}
		params := make([]onion.Type, len(args))
		for i, a := range args {
			params[i] = a
			if a == tUnknown {
				params[i] = TypeText
			}
			if a.Base == onion.Bytea {
				return nil, TypeText, byteaTextRefusal(name)
			}
		}
		if first == 2 && !isTextType(params[0]) {
			return nil, TypeText, refuseArgs(name, args)
		}
		return params, TypeText, nil
	}
}

// joinValues formats the non-NULL values with their output functions.
func joinValues(vals []Value, sep string, env onion.Env) string {
	var b strings.Builder
	first := true
	for _, v := range vals {
		if v.Null {
			continue
		}
		if !first {
			b.WriteString(sep)
		}
		first = false
		b.WriteString(v.Text(env))
	}
	return b.String()
}

// leftRight is left(s, n) (first) or right(s, n), in characters; a
// negative n counts from the other end.
func leftRight(first bool) func(*Evaluator, []Value, onion.Type) (Value, error) {
	return func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
		r := []rune(str(a[0]))
		n := a[1].Int
		if n < 0 {
			n = max(int64(len(r))+n, 0)
		}
		n = min(n, int64(len(r)))
		if first {
			return textVal(string(r[:n])), nil
		}
		return textVal(string(r[int64(len(r))-n:])), nil
	}
}

// pad is lpad(s, n [, fill]) (left) or rpad, in characters: s cut to n
// characters, or filled up to n with fill (' ' by default) repeated; an
// empty fill does not fill.
func pad(left bool) func(*Evaluator, []Value, onion.Type) (Value, error) {
	return func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
		r := []rune(str(a[0]))
		n := max(a[1].Int, 0)
		fill := []rune(" ")
		if len(a) == 3 {
			fill = []rune(str(a[2]))
		}
		if n*4 > maxTextBytes {
			return Value{}, lengthError()
		}
		if int64(len(r)) >= n {
			return textVal(string(r[:n])), nil
		}
		if len(fill) == 0 {
			return textVal(string(r)), nil
		}
		add := make([]rune, 0, n-int64(len(r)))
		for i := 0; int64(len(add)) < n-int64(len(r)); i++ {
			add = append(add, fill[i%len(fill)])
		}
		if left {
			return textVal(string(add) + string(r)), nil
		}
		return textVal(string(r) + string(add)), nil
	}
}

// trim is ltrim, rtrim or btrim(s [, chars]): the characters of chars (a
// blank by default) removed from the start and/or the end.
func trim(start, end bool) func(*Evaluator, []Value, onion.Type) (Value, error) {
	return func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
		cut := " "
		if len(a) == 2 {
			cut = str(a[1])
		}
		s := str(a[0])
		if start {
			s = strings.TrimLeft(s, cut)
		}
		if end {
			s = strings.TrimRight(s, cut)
		}
		return textVal(s), nil
	}
}

func strpos(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
	s, sub := str(a[0]), str(a[1])
	i := strings.Index(s, sub)
	if i < 0 {
		return Int4Value(0), nil
	}
	return Int4Value(int64(utf8.RuneCountInString(s[:i])) + 1), nil
}

// unifying types coalesce, greatest and least: the arguments' common
// type (commonType).
func unifying(name string) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		var t *onion.Type
		for _, a := range args {
			if a == tUnknown {
				continue
			}
			if t == nil {
				x := a
				t = &x
				continue
			}
			c, ok := commonType(*t, a)
			if !ok {
				return nil, TypeText, refuseArgs(name, args)
			}
			t = &c
		}
		if t == nil {
			t = &TypeText
		}
		params := make([]onion.Type, len(args))
		for i := range params {
			params[i] = *t
		}
		return params, *t, nil
	}
}

// commonType is the type PostgreSQL resolves two values of a CASE,
// COALESCE, GREATEST or LEAST to, as far as the proxy computes it:
// integers widen, with numeric numeric, with double precision double
// precision; text, varchar and their mix text. Others only with their
// own type; character(n) with another text type is not resolved here
// (PostgreSQL's choice then depends on the order).
func commonType(a, b onion.Type) (onion.Type, bool) {
	ka, _ := KindOf(a)
	kb, _ := KindOf(b)
	switch {
	case ka == KindInt && kb == KindInt:
		return widerInt(a, b), true
	case (ka == KindNumeric || ka == KindInt) && (kb == KindNumeric || kb == KindInt):
		return TypeNumeric, true
	case (ka == KindFloat || kb == KindFloat) && (ka == KindFloat || ka == KindInt || ka == KindNumeric) && (kb == KindFloat || kb == KindInt || kb == KindNumeric):
		return TypeFloat8, true
	case ka == KindText && kb == KindText:
		switch {
		case a == b:
			return a, true
		case a.Base == onion.Char || b.Base == onion.Char:
			return a, false
		}
		return TypeText, true
	case (ka == KindTimestamp || ka == KindDate) && (kb == KindTimestamp || kb == KindDate) && a != b:
		// date < timestamp < timestamptz, the datetime category's
		// implicit casts.
		if a.Base == onion.Timestamptz || b.Base == onion.Timestamptz {
			return onion.Type{Base: onion.Timestamptz}, true
		}
		return onion.Type{Base: onion.Timestamp}, true
	}
	return a, a == b
}

// ConvertTo converts v to the unified type t (integers widen, to numeric
// too; text kinds keep their text; a date or timestamp becomes a
// timestamp[tz] in the session's time zone).
func ConvertTo(v Value, t onion.Type, env onion.Env) (Value, error) {
	if v.Null {
		return NullOf(t), nil
	}
	kv, _ := KindOf(v.Type)
	kt, _ := KindOf(t)
	if kv == KindDate && kt == KindTimestamp {
		return dateToTimestamp(v, t, env)
	}
	if kv == KindTimestamp && kt == KindTimestamp && v.Type.Base != t.Base {
		ev := &Evaluator{Env: env}
		x, _ := ev.sameTimestamps(v, Value{Type: t})
		return x, nil
	}
	if kv == KindInt && kt == KindNumeric {
		return Value{Type: t, Num: decimalFromInt(v.Int)}, nil
	}
	if kv != KindFloat && kt == KindFloat {
		return Value{Type: t, Int: v.float8Bits()}, nil
	}
	if kv == KindText && v.Type.Base == onion.Char && t.Base != onion.Char {
		return Value{Type: t, Str: str(v)}, nil
	}
	v.Type = t
	return v, nil
}

// numeric1 types a one-argument numeric function: integers, numeric and
// double precision keep their type, or (intAsFloat) integers are read
// as double precision, as PostgreSQL resolves abs, ceil, floor and sign
// for them.
func numeric1(name string, intAsFloat bool) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != 1 {
			return nil, TypeNumeric, refuseArgs(name, args)
		}
		t := args[0]
		switch {
		case isIntType(t) && intAsFloat:
			t = TypeFloat8
		case isIntType(t), isNumType(t), isFloatType(t):
		case t == tUnknown:
			t = TypeFloat8 // an unknown literal resolves to double precision
		default:
			return nil, TypeNumeric, refuseArgs(name, args)
		}
		t = onion.Type{Base: t.Base}
		return []onion.Type{t}, t, nil
	}
}

func roundSig(name string) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) == 2 {
			if !(isIntType(args[1]) || args[1] == tUnknown) || !(isIntType(args[0]) || isNumType(args[0]) || args[0] == tUnknown) {
				return nil, TypeNumeric, refuseArgs(name, args)
			}
			return []onion.Type{TypeNumeric, TypeInt4}, TypeNumeric, nil
		}
		return numeric1(name, true)(args)
	}
}
