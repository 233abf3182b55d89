package exec

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgnumeric"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// The numeric functions and the casts of the scalar library (scalar.go).

// extreme is greatest (dir 1) or least (-1) of the non-NULL arguments,
// converted to the unified type.
func extreme(dir int) func(*Evaluator, []Value, onion.Type) (Value, error) {
	return func(ev *Evaluator, a []Value, t onion.Type) (Value, error) {
		best := NullOf(t)
		for _, v := range a {
			if v.Null {
				continue
			}
			v, err := ConvertTo(v, t, ev.Env)
			if err != nil {
				return Value{}, err
			}
			if best.Null {
				best = v
				continue
			}
			c, err := Compare(v, best)
			if err != nil {
				return Value{}, err
			}
			if c*dir > 0 {
				best = v
			}
		}
		return best, nil
	}
}

// abs is |x|: integers fail on their smallest value (22003).
func abs(_ *Evaluator, a []Value, t onion.Type) (Value, error) {
	x := a[0]
	switch k, _ := KindOf(t); k {
	case KindInt:
		if x.Int < 0 {
			return IntRange(t, -x.Int, x.Int == math.MinInt64)
		}
		return Value{Type: t, Int: x.Int}, nil
	case KindNumeric:
		return Value{Type: t, Num: x.Numeric().Abs()}, nil
	}
	return Float8Value(math.Abs(x.float())), nil
}

// roundFunc is ceil, floor, round or trunc: of numeric (with an optional
// scale for round and trunc; halves away from zero) or of double
// precision (round to nearest even, as rint).
func roundFunc(op string) func(*Evaluator, []Value, onion.Type) (Value, error) {
	return func(_ *Evaluator, a []Value, t onion.Type) (Value, error) {
		if t.Base == onion.Float8 {
			x := a[0].float()
			switch op {
			case "ceil":
				x = math.Ceil(x)
			case "floor":
				x = math.Floor(x)
			case "round":
				x = math.RoundToEven(x)
			case "trunc":
				x = math.Trunc(x)
			}
			return Float8Value(x), nil
		}
		d := a[0].Numeric()
		scale := 0
		if len(a) == 2 {
			scale = int(max(min(a[1].Int, math.MaxInt32), math.MinInt32))
		}
		var r Decimal
		var err error
		switch op {
		case "ceil":
			r, err = d.Ceil()
		case "floor":
			r, err = d.Floor()
		case "round":
			r, err = d.Round(scale)
		case "trunc":
			r, err = d.Trunc(scale)
		}
		return Value{Type: TypeNumeric, Num: r}, err
	}
}

// sign is -1, 0 or 1, of numeric (display scale 0; NaN stays NaN) or
// of double precision.
func sign(_ *Evaluator, a []Value, t onion.Type) (Value, error) {
	if t.Base == onion.Float8 {
		x := a[0].float()
		switch {
		case x > 0:
			x = 1
		case x < 0:
			x = -1
		default:
			x = 0 // NaN too, as float8_sign
		}
		return Float8Value(x), nil
	}
	d := a[0].Numeric()
	if d.IsNaN() {
		return Value{Type: TypeNumeric, Num: d}, nil
	}
	return Value{Type: TypeNumeric, Num: decimalFromInt(int64(d.Sign()))}, nil
}

// modSig types mod(a, b): two integers (the wider type) or numeric.
func modSig(args []onion.Type) ([]onion.Type, onion.Type, error) {
	if len(args) != 2 {
		return nil, TypeNumeric, refuseArgs("mod", args)
	}
	a, b := args[0], args[1]
	if a == tUnknown {
		a = b
	}
	if b == tUnknown {
		b = a
	}
	switch {
	case a == tUnknown:
		return nil, TypeNumeric, refuseArgs("mod", args)
	case isIntType(a) && isIntType(b):
		w := widerInt(a, b)
		return []onion.Type{w, w}, w, nil
	case (isIntType(a) || isNumType(a)) && (isIntType(b) || isNumType(b)):
		return []onion.Type{TypeNumeric, TypeNumeric}, TypeNumeric, nil
	}
	return nil, TypeNumeric, refuseArgs("mod", args)
}

func mod(_ *Evaluator, a []Value, t onion.Type) (Value, error) {
	if k, _ := KindOf(t); k == KindInt {
		if a[1].Int == 0 {
			return Value{}, errDivisionByZero
		}
		if a[1].Int == -1 {
			return Value{Type: t, Int: 0}, nil // no overflow for the smallest value
		}
		return Value{Type: t, Int: a[0].Int % a[1].Int}, nil
	}
	r, err := a[0].Numeric().Mod(a[1].Numeric())
	return Value{Type: TypeNumeric, Num: r}, err
}

// shiftFunc is the bit shift x << n or x >> n of an integer (int2shl,
// int4shr, int8shl ...): n is an integer, the result x's type. PostgreSQL
// shifts with the C operators, which on its x86-64 and ARM64 builds take
// n modulo the width of int (32 bits for int2 and int4, whose int2 is
// widened first) or of int64; >> is arithmetic.
func shiftFunc(op string) scalarFunc {
	return scalarFunc{sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != 2 || !isIntType(args[0]) || !(isIntType(args[1]) && args[1].Base != onion.BigInt || args[1] == tUnknown) {
			return nil, TypeInt4, refuseArgs("operator "+op, args)
		}
		return []onion.Type{args[0], TypeInt4}, args[0], nil
	}, call: func(_ *Evaluator, a []Value, t onion.Type) (Value, error) {
		x, n := a[0].Int, uint(a[1].Int)
		if t.Base == onion.BigInt {
			n &= 63
		} else {
			n &= 31
		}
		var r int64
		if op == "<<" {
			r = x << n
		} else {
			r = x >> n
		}
		switch t.Base {
		case onion.SmallInt:
			r = int64(int16(r))
		case onion.Integer:
			r = int64(int32(r))
		}
		return Value{Type: t, Int: r}, nil
	}}
}

// castFunc is CAST(x AS t) (ExprFunc "cast"): its last "argument" type
// is the target (signature appends it).
var castFunc = scalarFunc{sig: castSig, call: Cast}

func castSig(args []onion.Type) ([]onion.Type, onion.Type, error) {
	if len(args) != 2 {
		return nil, TypeText, refuseArgs("cast", args)
	}
	from, to := args[0], args[1]
	if from == tUnknown {
		return []onion.Type{to}, to, nil // a literal read as the type
	}
	kf, _ := KindOf(from)
	kt, err := KindOf(to)
	ok := err == nil
	switch {
	case !ok:
	case kf == KindBytea || kt == KindBytea:
		if from.Base != to.Base {
			return nil, to, byteaTextRefusal("a cast between bytea and " + map[bool]string{true: to.String(), false: from.String()}[kf == KindBytea])
		}
	case kt == KindText:
		// Any value's text (cut or padded to a length, as an explicit
		// cast does).
	case kf == KindText:
		// The type's input function, as PostgreSQL's I/O cast.
	case kf == KindJSONB:
		ok = kt == KindNumeric || kt == KindInt || kt == KindFloat || kt == KindBool || kt == KindJSONB
	case kf == KindInt || kf == KindNumeric || kf == KindFloat:
		ok = kt == KindInt || kt == KindNumeric || kt == KindFloat || kt == KindBool && from.Base == onion.Integer
	case kf == KindBool:
		ok = to.Base == onion.Integer || kt == KindBool
	case kf == KindDate || kf == KindTimestamp:
		ok = kt == KindDate || kt == KindTimestamp || kf == KindTimestamp && kt == KindTime
	case kf == KindTime || kf == KindInterval:
		ok = kt == KindTime || kt == KindInterval
	default:
		ok = from == to
	}
	if !ok {
		return nil, to, rewrite.Refusal("cast from %s to %s is not supported in a query the proxy computes", from, to)
	}
	return []onion.Type{from}, to, nil
}

func Cast(ev *Evaluator, a []Value, to onion.Type) (Value, error) {
	x := a[0]
	kf, _ := KindOf(x.Type)
	kt, _ := KindOf(to)
	switch {
	case x.Type == to:
		return x, nil
	case kt == KindText && kf == KindBool:
		s := "false" // booltext, not boolout
		if x.Int != 0 {
			s = "true"
		}
		return Value{Type: to, Str: s}, nil
	case kt == KindText:
		s := x.Text(ev.Env)
		if x.Type.Base == onion.Char && to.Base != onion.Char {
			s = str(x)
		}
		if to.Length > 0 {
			// An explicit cast cuts to the length without an error;
			// character(n) pads to it.
			r := []rune(s)
			if len(r) > to.Length {
				r = r[:to.Length]
			}
			s = string(r)
			if to.Base == onion.Char {
				s += strings.Repeat(" ", to.Length-len(r))
			}
		}
		return Value{Type: to, Str: s}, nil
	case kf == KindJSONB:
		return castJSON(ev, x, to)
	case kf == KindText:
		v, err := to.ParseText([]byte(str(x)), ev.Env)
		if err != nil {
			return Value{}, err
		}
		return FromOnion(to, v, ev.Env)
	case kf == KindDate && kt == KindTimestamp:
		return dateToTimestamp(x, to, ev.Env)
	case kf == KindTimestamp && kt == KindDate:
		return timestampToDate(x, ev.Env), nil
	case kf == KindTime && kt == KindInterval:
		return Interval{us: x.Int}.val(), nil
	case kf == KindInterval && kt == KindTime:
		return Value{Type: to, Int: intervalToTime(IntervalOf(x))}, nil
	case kf == KindTimestamp && kt == KindTime:
		// timestamp[tz]_time: the wall clock's time of day; NULL for
		// the infinities.
		if x.Int == math.MinInt64 || x.Int == math.MaxInt64 {
			return NullOf(to), nil
		}
		local, _ := onion.LocalTime(x.Int, zoneOf(x.Type, ev.Env))
		return Value{Type: to, Int: floorMod(local, usPerDay)}, nil
	case kf == KindTimestamp && kt == KindTimestamp:
		// timestamp <-> timestamptz: the wall clock in the session's
		// time zone.
		if x.Int == math.MinInt64 || x.Int == math.MaxInt64 {
			return Value{Type: to, Int: x.Int}, nil
		}
		if to.Base == onion.Timestamp {
			local, _ := onion.LocalTime(x.Int, ev.Env.TimeZone)
			return Value{Type: to, Int: local}, nil
		}
		return Value{Type: to, Int: onion.FromLocalTime(x.Int, ev.Env.TimeZone)}, nil
	case kt == KindBool:
		return boolVal(x.Int != 0), nil
	case kf == KindBool:
		return Value{Type: to, Int: x.Int}, nil
	case kt == KindFloat:
		return Float8Value(x.float()), nil
	case kt == KindNumeric:
		d := x.Numeric()
		if kf == KindFloat {
			f := x.float()
			switch {
			case math.IsNaN(f):
				d = pgnumeric.NaN()
			case math.IsInf(f, 0):
				d = pgnumeric.Inf(int(math.Copysign(1, f)))
			default:
				// float8_numeric: 15 significant digits (DBL_DIG).
				var err error
				if d, err = parseDecimal(strconv.FormatFloat(f, 'g', 15, 64)); err != nil {
					return Value{}, err
				}
			}
		}
		if to.Precision == 0 {
			return Value{Type: TypeNumeric, Num: d}, nil
		}
		v, err := to.ParseText([]byte(d.String()), ev.Env) // the typmod rounds or fails
		if err != nil {
			return Value{}, err
		}
		return FromOnion(to, v, ev.Env)
	case kt == KindInt:
		switch kf {
		case KindInt:
			return IntRange(to, x.Int, false)
		case KindFloat:
			f := math.RoundToEven(x.float())
			if math.IsNaN(f) || f < -9.223372036854775808e18 || f >= 9.223372036854775808e18 {
				return IntRange(to, 0, true)
			}
			return IntRange(to, int64(f), false)
		}
		r, err := x.Numeric().Round(0)
		if err != nil {
			return Value{}, err
		}
		if !r.IsFinite() {
			what := "infinity"
			if r.IsNaN() {
				what = "NaN"
			}
			return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "cannot convert " + what + " to " + to.String()}
		}
		i, err := strconv.ParseInt(r.String(), 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return IntRange(to, 0, true)
			}
			return Value{}, err
		}
		return IntRange(to, i, false)
	}
	return Value{}, rewrite.Refusal("cast from %s to %s is not supported in a query the proxy computes", x.Type, to)
}
