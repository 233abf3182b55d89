package exec

// #cgo LDFLAGS: -lm
// #include <math.h>
import "C"

import (
	"math"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgnumeric"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// The trigonometric, exponential and logarithm functions of double
// precision: PostgreSQL 15's checks (float.c) around the C library's
// functions, which the proxy calls too, since Go's differ from glibc's
// in the last bits. ln, log and exp of numeric, which have their own
// precision rules, are refused.

// radiansPerDegree is PostgreSQL's RADIANS_PER_DEGREE.
const radiansPerDegree = 0.0174532925199432957692

var (
	ErrOverflow  = &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "value out of range: overflow"}
	errUnderflow = &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "value out of range: underflow"}
	errOutOfRng  = &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "input is out of range"}
)

// floatSig types a function of n double precision arguments; integer and
// numeric arguments are cast (numeric refused when the function has a
// numeric variant of its own).
func floatSig(name string, n int, numericVariant bool) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != n {
			return nil, TypeFloat8, refuseArgs(name, args)
		}
		params := make([]onion.Type, n)
		for i, a := range args {
			switch {
			case a == tUnknown, isFloatType(a), isIntType(a):
			case isNumType(a) && !numericVariant:
			case isNumType(a):
				return nil, TypeNumeric, rewrite.Refusal("%s of numeric is not supported in a query the proxy computes", name)
			default:
				return nil, TypeFloat8, refuseArgs(name, args)
			}
			params[i] = TypeFloat8
		}
		return params, TypeFloat8, nil
	}
}

// numericOr is a function of one value with a numeric variant (ln, exp,
// log10): numeric arguments take it (f, PostgreSQL's numeric_ln ...),
// integers and double precision the double precision one.
func numericOr(f func(pgnumeric.Decimal) (pgnumeric.Decimal, error), float *scalarFunc) *scalarFunc {
	return &scalarFunc{sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) == 1 && isNumType(args[0]) {
			return []onion.Type{TypeNumeric}, TypeNumeric, nil
		}
		return float.sig(args)
	}, call: func(ev *Evaluator, a []Value, t onion.Type) (Value, error) {
		if t.Base == onion.Numeric {
			r, err := f(a[0].Numeric())
			return Value{Type: TypeNumeric, Num: r}, err
		}
		return float.call(ev, a, t)
	}}
}

// logFunc is log(x), numeric or double precision as numericOr, and
// log(b, x), which PostgreSQL has for numeric only (numeric_log).
func logFunc(float *scalarFunc) *scalarFunc {
	one := numericOr(pgnumeric.Decimal.Log10, float)
	return &scalarFunc{sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != 2 {
			return one.sig(args)
		}
		for _, a := range args {
			if !(a == tUnknown || isIntType(a) || isNumType(a)) {
				return nil, TypeNumeric, refuseArgs("log", args)
			}
		}
		return []onion.Type{TypeNumeric, TypeNumeric}, TypeNumeric, nil
	}, call: func(ev *Evaluator, a []Value, t onion.Type) (Value, error) {
		if len(a) != 2 {
			return one.call(ev, a, t)
		}
		r, err := pgnumeric.LogBase(a[0].Numeric(), a[1].Numeric())
		return Value{Type: TypeNumeric, Num: r}, err
	}}
}

// float1 is a scalar function of one double precision value.
func float1(name string, numericVariant bool, f func(x float64) (float64, error)) *scalarFunc {
	return &scalarFunc{sig: floatSig(name, 1, numericVariant), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
		r, err := f(a[0].float())
		if err != nil {
			return Value{}, err
		}
		return Float8Value(r), nil
	}}
}

// trig is dsin, dcos, dtan and dcot: NaN for NaN, an error for an
// infinity.
func trig(c func(C.double) C.double, cot, checkOverflow bool) func(float64) (float64, error) {
	return func(x float64) (float64, error) {
		if math.IsNaN(x) {
			return math.NaN(), nil
		}
		if math.IsInf(x, 0) {
			return 0, errOutOfRng
		}
		r := float64(c(C.double(x)))
		if cot {
			r = 1.0 / r
		}
		if checkOverflow && math.IsInf(r, 0) {
			return 0, ErrOverflow
		}
		return r, nil
	}
}

// arc is dasin and dacos: only [-1, 1].
func arc(c func(C.double) C.double) func(float64) (float64, error) {
	return func(x float64) (float64, error) {
		if math.IsNaN(x) {
			return math.NaN(), nil
		}
		if x < -1 || x > 1 {
			return 0, errOutOfRng
		}
		r := float64(c(C.double(x)))
		if math.IsInf(r, 0) {
			return 0, ErrOverflow
		}
		return r, nil
	}
}

// logarithm is dlog1 and dlog10.
func logarithm(c func(C.double) C.double) func(float64) (float64, error) {
	return func(x float64) (float64, error) {
		if x == 0 {
			return 0, &pgconn.PgError{Severity: "ERROR", Code: "2201E", Message: "cannot take logarithm of zero"}
		}
		if x < 0 {
			return 0, &pgconn.PgError{Severity: "ERROR", Code: "2201E", Message: "cannot take logarithm of a negative number"}
		}
		r := float64(c(C.double(x)))
		if math.IsInf(r, 0) && !math.IsInf(x, 0) {
			return 0, ErrOverflow
		}
		if r == 0 && x != 1 {
			return 0, errUnderflow
		}
		return r, nil
	}
}

// dexp is exp of double precision.
func dexp(x float64) (float64, error) {
	switch {
	case math.IsNaN(x):
		return x, nil
	case math.IsInf(x, 1):
		return x, nil
	case math.IsInf(x, -1):
		return 0, nil
	}
	r := float64(C.exp(C.double(x)))
	switch {
	case math.IsInf(r, 0):
		return 0, ErrOverflow
	case r == 0:
		return 0, errUnderflow
	}
	return r, nil
}

// float8Mul and float8Div are float8_mul and float8_div's checks.
func float8Mul(x, y float64) (float64, error) {
	r := x * y
	if math.IsInf(r, 0) && !math.IsInf(x, 0) && !math.IsInf(y, 0) {
		return 0, ErrOverflow
	}
	if r == 0 && x != 0 && y != 0 {
		return 0, errUnderflow
	}
	return r, nil
}

func float8Div(x, y float64) (float64, error) {
	if y == 0 && !math.IsNaN(x) {
		return 0, &pgconn.PgError{Severity: "ERROR", Code: "22012", Message: "division by zero"}
	}
	r := x / y
	if math.IsInf(r, 0) && !math.IsInf(x, 0) {
		return 0, ErrOverflow
	}
	if r == 0 && x != 0 && !math.IsInf(y, 0) {
		return 0, errUnderflow
	}
	return r, nil
}

func mathFuncs() map[string]*scalarFunc {
	cf := func(f func(C.double) C.double) func(C.double) C.double { return f }
	sin := cf(func(x C.double) C.double { return C.sin(x) })
	cos := cf(func(x C.double) C.double { return C.cos(x) })
	tan := cf(func(x C.double) C.double { return C.tan(x) })
	return map[string]*scalarFunc{
		"sin":  float1("sin", false, trig(sin, false, true)),
		"cos":  float1("cos", false, trig(cos, false, true)),
		"tan":  float1("tan", false, trig(tan, false, false)),
		"cot":  float1("cot", false, trig(tan, true, false)),
		"asin": float1("asin", false, arc(func(x C.double) C.double { return C.asin(x) })),
		"acos": float1("acos", false, arc(func(x C.double) C.double { return C.acos(x) })),
		"atan": float1("atan", false, func(x float64) (float64, error) {
			if math.IsNaN(x) {
				return x, nil
			}
			return float64(C.atan(C.double(x))), nil
		}),
		"atan2": {sig: floatSig("atan2", 2, false), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			y, x := a[0].float(), a[1].float()
			if math.IsNaN(y) || math.IsNaN(x) {
				return Float8Value(math.NaN()), nil
			}
			return Float8Value(float64(C.atan2(C.double(y), C.double(x)))), nil
		}},
		"ln":    numericOr(pgnumeric.Decimal.Ln, float1("ln", false, logarithm(func(x C.double) C.double { return C.log(x) }))),
		"log":   logFunc(float1("log", false, logarithm(func(x C.double) C.double { return C.log10(x) }))),
		"log10": numericOr(pgnumeric.Decimal.Log10, float1("log10", false, logarithm(func(x C.double) C.double { return C.log10(x) }))),
		"exp":   numericOr(pgnumeric.Decimal.Exp, float1("exp", false, dexp)),
		"degrees": float1("degrees", false, func(x float64) (float64, error) {
			return float8Div(x, radiansPerDegree)
		}),
		"radians": float1("radians", false, func(x float64) (float64, error) {
			return float8Mul(x, radiansPerDegree)
		}),
		"pi": {sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
			if len(args) != 0 {
				return nil, TypeFloat8, refuseArgs("pi", args)
			}
			return nil, TypeFloat8, nil
		}, call: func(*Evaluator, []Value, onion.Type) (Value, error) { return Float8Value(math.Pi), nil }},
	}
}
