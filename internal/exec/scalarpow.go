package exec

// #cgo LDFLAGS: -lm
// #include <math.h>
import "C"

import (
	"math"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/onion"
)

// power is power(x, y) and the operator ^: of double precision (dpow),
// PostgreSQL's checks around the C library's pow, which the proxy calls
// too, since Go's math.Pow rounds differently from glibc's in about half
// of random cases (a differential run showed); of numeric values
// (numeric_power), pgnumeric's Power.
var powerFunc = scalarFunc{sig: powerSig, call: dpow}

func powerSig(args []onion.Type) ([]onion.Type, onion.Type, error) {
	if len(args) != 2 {
		return nil, TypeFloat8, refuseArgs("power", args)
	}
	float, numeric := false, false
	for _, a := range args {
		switch {
		case isFloatType(a):
			float = true
		case isNumType(a):
			numeric = true
		case a == tUnknown || isIntType(a):
		default:
			return nil, TypeFloat8, refuseArgs("power", args)
		}
	}
	if numeric && !float {
		// An integer or numeric with a numeric resolves to
		// numeric_power; with a double precision, to dpow.
		return []onion.Type{TypeNumeric, TypeNumeric}, TypeNumeric, nil
	}
	return []onion.Type{TypeFloat8, TypeFloat8}, TypeFloat8, nil
}

func dpow(_ *Evaluator, a []Value, t onion.Type) (Value, error) {
	if t.Base == onion.Numeric {
		r, err := a[0].Numeric().Power(a[1].Numeric())
		return Value{Type: TypeNumeric, Num: r}, err
	}
	x, y := a[0].float(), a[1].float()
	overflow := &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "value out of range: overflow"}
	underflow := &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "value out of range: underflow"}
	switch {
	case math.IsNaN(x):
		if math.IsNaN(y) || y != 0 {
			return Float8Value(math.NaN()), nil
		}
		return Float8Value(1), nil
	case math.IsNaN(y):
		if x != 1 {
			return Float8Value(math.NaN()), nil
		}
		return Float8Value(1), nil
	case x == 0 && y < 0:
		return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "2201F", Message: "zero raised to a negative power is undefined"}
	case x < 0 && math.Floor(y) != y:
		return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "2201F", Message: "a negative number raised to a non-integer power yields a complex result"}
	case math.IsInf(y, 0):
		ax := math.Abs(x)
		switch {
		case ax == 1:
			return Float8Value(1), nil
		case y > 0 && ax > 1, y < 0 && ax < 1:
			return Float8Value(math.Inf(1)), nil
		}
		return Float8Value(0), nil
	case math.IsInf(x, 0):
		if y == 0 {
			return Float8Value(1), nil
		}
		if x > 0 {
			if y > 0 {
				return Float8Value(x), nil
			}
			return Float8Value(0), nil
		}
		// -Infinity: the sign of an odd integer power.
		odd := math.Floor(y) == y && math.Mod(y, 2) != 0
		switch {
		case y > 0 && odd:
			return Float8Value(x), nil
		case y > 0:
			return Float8Value(-x), nil
		case odd:
			return Float8Value(math.Copysign(0, -1)), nil
		}
		return Float8Value(0), nil
	}
	r, err := C.pow(C.double(x), C.double(y))
	result := float64(r)
	switch {
	case math.IsNaN(result):
		// Impossible after the checks above but for old glibc bugs:
		// as PostgreSQL handles them.
		ax := math.Abs(x)
		switch {
		case x == 0:
			return Float8Value(0), nil
		case ax == 1:
			return Float8Value(1), nil
		case y >= 0 && ax > 1, y < 0 && ax < 1:
			return Value{}, overflow
		}
		return Value{}, underflow
	case err != nil: // ERANGE
		if result != 0 {
			return Value{}, overflow
		}
		return Value{}, underflow
	case math.IsInf(result, 0):
		return Value{}, overflow
	case result == 0 && x != 0:
		return Value{}, underflow
	}
	return Float8Value(result), nil
}
