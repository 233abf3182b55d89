package engine

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
		return nil, tFloat8, refuseArgs("power", args)
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
			return nil, tFloat8, refuseArgs("power", args)
		}
	}
	if numeric && !float {
		// An integer or numeric with a numeric resolves to
		// numeric_power; with a double precision, to dpow.
		return []onion.Type{tNumeric, tNumeric}, tNumeric, nil
	}
	return []onion.Type{tFloat8, tFloat8}, tFloat8, nil
}

func dpow(_ *evaluator, a []aval, t onion.Type) (aval, error) {
	if t.Base == onion.Numeric {
		r, err := a[0].numeric().Power(a[1].numeric())
		return aval{t: tNumeric, d: r}, err
	}
	x, y := a[0].float(), a[1].float()
	overflow := &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "value out of range: overflow"}
	underflow := &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: "value out of range: underflow"}
	switch {
	case math.IsNaN(x):
		if math.IsNaN(y) || y != 0 {
			return float8Val(math.NaN()), nil
		}
		return float8Val(1), nil
	case math.IsNaN(y):
		if x != 1 {
			return float8Val(math.NaN()), nil
		}
		return float8Val(1), nil
	case x == 0 && y < 0:
		return aval{}, &pgconn.PgError{Severity: "ERROR", Code: "2201F", Message: "zero raised to a negative power is undefined"}
	case x < 0 && math.Floor(y) != y:
		return aval{}, &pgconn.PgError{Severity: "ERROR", Code: "2201F", Message: "a negative number raised to a non-integer power yields a complex result"}
	case math.IsInf(y, 0):
		ax := math.Abs(x)
		switch {
		case ax == 1:
			return float8Val(1), nil
		case y > 0 && ax > 1, y < 0 && ax < 1:
			return float8Val(math.Inf(1)), nil
		}
		return float8Val(0), nil
	case math.IsInf(x, 0):
		if y == 0 {
			return float8Val(1), nil
		}
		if x > 0 {
			if y > 0 {
				return float8Val(x), nil
			}
			return float8Val(0), nil
		}
		// -Infinity: the sign of an odd integer power.
		odd := math.Floor(y) == y && math.Mod(y, 2) != 0
		switch {
		case y > 0 && odd:
			return float8Val(x), nil
		case y > 0:
			return float8Val(-x), nil
		case odd:
			return float8Val(math.Copysign(0, -1)), nil
		}
		return float8Val(0), nil
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
			return float8Val(0), nil
		case ax == 1:
			return float8Val(1), nil
		case y >= 0 && ax > 1, y < 0 && ax < 1:
			return aval{}, overflow
		}
		return aval{}, underflow
	case err != nil: // ERANGE
		if result != 0 {
			return aval{}, overflow
		}
		return aval{}, underflow
	case math.IsInf(result, 0):
		return aval{}, overflow
	case result == 0 && x != 0:
		return aval{}, underflow
	}
	return float8Val(result), nil
}
