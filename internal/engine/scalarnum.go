package engine

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
func extreme(dir int) func(*evaluator, []aval, onion.Type) (aval, error) {
	return func(ev *evaluator, a []aval, t onion.Type) (aval, error) {
		best := nullOf(t)
		for _, v := range a {
			if v.null {
				continue
			}
			v = convertTo(v, t, ev.env)
			if best.null {
				best = v
				continue
			}
			c, err := compare(v, best)
			if err != nil {
				return aval{}, err
			}
			if c*dir > 0 {
				best = v
			}
		}
		return best, nil
	}
}

// abs is |x|: integers fail on their smallest value (22003).
func abs(_ *evaluator, a []aval, t onion.Type) (aval, error) {
	x := a[0]
	switch k, _ := kindOf(t); k {
	case kInt:
		if x.i < 0 {
			return intRange(t, -x.i, x.i == math.MinInt64)
		}
		return aval{t: t, i: x.i}, nil
	case kNumeric:
		return aval{t: t, d: x.numeric().Abs()}, nil
	}
	return float8Val(math.Abs(x.float())), nil
}

// roundFunc is ceil, floor, round or trunc: of numeric (with an optional
// scale for round and trunc; halves away from zero) or of double
// precision (round to nearest even, as rint).
func roundFunc(op string) func(*evaluator, []aval, onion.Type) (aval, error) {
	return func(_ *evaluator, a []aval, t onion.Type) (aval, error) {
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
			return float8Val(x), nil
		}
		d := a[0].numeric()
		scale := 0
		if len(a) == 2 {
			scale = int(max(min(a[1].i, math.MaxInt32), math.MinInt32))
		}
		var r decimal
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
		return aval{t: tNumeric, d: r}, err
	}
}

// sign is -1, 0 or 1, of numeric (display scale 0; NaN stays NaN) or
// of double precision.
func sign(_ *evaluator, a []aval, t onion.Type) (aval, error) {
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
		return float8Val(x), nil
	}
	d := a[0].numeric()
	if d.IsNaN() {
		return aval{t: tNumeric, d: d}, nil
	}
	return aval{t: tNumeric, d: decimalFromInt(int64(d.Sign()))}, nil
}

// modSig types mod(a, b): two integers (the wider type) or numeric.
func modSig(args []onion.Type) ([]onion.Type, onion.Type, error) {
	if len(args) != 2 {
		return nil, tNumeric, refuseArgs("mod", args)
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
		return nil, tNumeric, refuseArgs("mod", args)
	case isIntType(a) && isIntType(b):
		w := widerInt(a, b)
		return []onion.Type{w, w}, w, nil
	case (isIntType(a) || isNumType(a)) && (isIntType(b) || isNumType(b)):
		return []onion.Type{tNumeric, tNumeric}, tNumeric, nil
	}
	return nil, tNumeric, refuseArgs("mod", args)
}

func mod(_ *evaluator, a []aval, t onion.Type) (aval, error) {
	if k, _ := kindOf(t); k == kInt {
		if a[1].i == 0 {
			return aval{}, errDivisionByZero
		}
		if a[1].i == -1 {
			return aval{t: t, i: 0}, nil // no overflow for the smallest value
		}
		return aval{t: t, i: a[0].i % a[1].i}, nil
	}
	r, err := a[0].numeric().Mod(a[1].numeric())
	return aval{t: tNumeric, d: r}, err
}

// shiftFunc is the bit shift x << n or x >> n of an integer (int2shl,
// int4shr, int8shl ...): n is an integer, the result x's type. PostgreSQL
// shifts with the C operators, which on its x86-64 and ARM64 builds take
// n modulo the width of int (32 bits for int2 and int4, whose int2 is
// widened first) or of int64; >> is arithmetic.
func shiftFunc(op string) scalarFunc {
	return scalarFunc{sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != 2 || !isIntType(args[0]) || !(isIntType(args[1]) && args[1].Base != onion.BigInt || args[1] == tUnknown) {
			return nil, tInt4, refuseArgs("operator "+op, args)
		}
		return []onion.Type{args[0], tInt4}, args[0], nil
	}, call: func(_ *evaluator, a []aval, t onion.Type) (aval, error) {
		x, n := a[0].i, uint(a[1].i)
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
		return aval{t: t, i: r}, nil
	}}
}

// castFunc is CAST(x AS t) (ExprFunc "cast"): its last "argument" type
// is the target (signature appends it).
var castFunc = scalarFunc{sig: castSig, call: cast}

func castSig(args []onion.Type) ([]onion.Type, onion.Type, error) {
	if len(args) != 2 {
		return nil, tText, refuseArgs("cast", args)
	}
	from, to := args[0], args[1]
	if from == tUnknown {
		return []onion.Type{to}, to, nil // a literal read as the type
	}
	kf, _ := kindOf(from)
	kt, err := kindOf(to)
	ok := err == nil
	switch {
	case !ok:
	case kf == kBytea || kt == kBytea:
		if from.Base != to.Base {
			return nil, to, byteaTextRefusal("a cast between bytea and " + map[bool]string{true: to.String(), false: from.String()}[kf == kBytea])
		}
	case kt == kText:
		// Any value's text (cut or padded to a length, as an explicit
		// cast does).
	case kf == kText:
		// The type's input function, as PostgreSQL's I/O cast.
	case kf == kJSONB:
		ok = kt == kNumeric || kt == kInt || kt == kFloat || kt == kBool || kt == kJSONB
	case kf == kInt || kf == kNumeric || kf == kFloat:
		ok = kt == kInt || kt == kNumeric || kt == kFloat || kt == kBool && from.Base == onion.Integer
	case kf == kBool:
		ok = to.Base == onion.Integer || kt == kBool
	case kf == kDate || kf == kTs:
		ok = kt == kDate || kt == kTs || kf == kTs && kt == kTime
	case kf == kTime || kf == kIntv:
		ok = kt == kTime || kt == kIntv
	default:
		ok = from == to
	}
	if !ok {
		return nil, to, rewrite.Refusal("cast from %s to %s is not supported in a query the proxy computes", from, to)
	}
	return []onion.Type{from}, to, nil
}

func cast(ev *evaluator, a []aval, to onion.Type) (aval, error) {
	x := a[0]
	kf, _ := kindOf(x.t)
	kt, _ := kindOf(to)
	switch {
	case x.t == to:
		return x, nil
	case kt == kText && kf == kBool:
		s := "false" // booltext, not boolout
		if x.i != 0 {
			s = "true"
		}
		return aval{t: to, s: s}, nil
	case kt == kText:
		s := x.text(ev.env)
		if x.t.Base == onion.Char && to.Base != onion.Char {
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
		return aval{t: to, s: s}, nil
	case kf == kJSONB:
		return castJSON(ev, x, to)
	case kf == kText:
		v, err := to.ParseText([]byte(str(x)), ev.env)
		if err != nil {
			return aval{}, err
		}
		return fromOnion(to, v, ev.env)
	case kf == kDate && kt == kTs:
		return dateToTimestamp(x, to, ev.env), nil
	case kf == kTs && kt == kDate:
		return timestampToDate(x, ev.env), nil
	case kf == kTime && kt == kIntv:
		return interval{us: x.i}.val(), nil
	case kf == kIntv && kt == kTime:
		return aval{t: to, i: intervalToTime(intervalOf(x))}, nil
	case kf == kTs && kt == kTime:
		// timestamp[tz]_time: the wall clock's time of day; NULL for
		// the infinities.
		if x.i == math.MinInt64 || x.i == math.MaxInt64 {
			return nullOf(to), nil
		}
		local, _ := onion.LocalTime(x.i, zoneOf(x.t, ev.env))
		return aval{t: to, i: floorMod(local, usPerDay)}, nil
	case kf == kTs && kt == kTs:
		// timestamp <-> timestamptz: the wall clock in the session's
		// time zone.
		if x.i == math.MinInt64 || x.i == math.MaxInt64 {
			return aval{t: to, i: x.i}, nil
		}
		if to.Base == onion.Timestamp {
			local, _ := onion.LocalTime(x.i, ev.env.TimeZone)
			return aval{t: to, i: local}, nil
		}
		return aval{t: to, i: onion.FromLocalTime(x.i, ev.env.TimeZone)}, nil
	case kt == kBool:
		return boolVal(x.i != 0), nil
	case kf == kBool:
		return aval{t: to, i: x.i}, nil
	case kt == kFloat:
		return float8Val(x.float()), nil
	case kt == kNumeric:
		d := x.numeric()
		if kf == kFloat {
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
					return aval{}, err
				}
			}
		}
		if to.Precision == 0 {
			return aval{t: tNumeric, d: d}, nil
		}
		v, err := to.ParseText([]byte(d.String()), ev.env) // the typmod rounds or fails
		if err != nil {
			return aval{}, err
		}
		return fromOnion(to, v, ev.env)
	case kt == kInt:
		switch kf {
		case kInt:
			return intRange(to, x.i, false)
		case kFloat:
			f := math.RoundToEven(x.float())
			if math.IsNaN(f) || f < -9.223372036854775808e18 || f >= 9.223372036854775808e18 {
				return intRange(to, 0, true)
			}
			return intRange(to, int64(f), false)
		}
		r, err := x.numeric().Round(0)
		if err != nil {
			return aval{}, err
		}
		if !r.IsFinite() {
			what := "infinity"
			if r.IsNaN() {
				what = "NaN"
			}
			return aval{}, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: "cannot convert " + what + " to " + to.String()}
		}
		i, err := strconv.ParseInt(r.String(), 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return intRange(to, 0, true)
			}
			return aval{}, err
		}
		return intRange(to, i, false)
	}
	return aval{}, rewrite.Refusal("cast from %s to %s is not supported in a query the proxy computes", x.t, to)
}
