package pgnumeric

import "math"

// Int is the Go type of a PostgreSQL integer type: int16 for smallint
// (int2), int32 for integer (int4), int64 for bigint (int8).
//
// An operator on two different integer types computes in the wider one
// (int24pl, int48mul, ...: smallint + integer is an integer sum), so
// convert the narrower operand first. An integer mixed with a numeric is
// converted with FromInt64.
type Int interface{ int16 | int32 | int64 }

// rangeError is the overflow error of the type of T.
func rangeError[T Int]() error {
	var z T
	msg := "bigint out of range"
	switch any(z).(type) {
	case int16:
		msg = "smallint out of range"
	case int32:
		msg = "integer out of range"
	}
	return pgError(CodeNumericValueOutOfRange, msg)
}

// minInt returns the smallest value of T.
func minInt[T Int]() T {
	var z T
	switch any(z).(type) {
	case int16:
		return any(int16(math.MinInt16)).(T)
	case int32:
		return any(int32(math.MinInt32)).(T)
	}
	return any(int64(math.MinInt64)).(T)
}

// AddInt returns a + b as int2pl, int4pl and int8pl do: 22003 "smallint
// out of range", "integer out of range" or "bigint out of range" when the
// sum does not fit in T.
func AddInt[T Int](a, b T) (T, error) {
	s := a + b // wraps around on overflow
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, rangeError[T]()
	}
	return s, nil
}

// SubInt returns a - b as int2mi, int4mi and int8mi do, with AddInt's
// errors.
func SubInt[T Int](a, b T) (T, error) {
	d := a - b
	if (a >= 0) != (b >= 0) && (d >= 0) != (a >= 0) {
		return 0, rangeError[T]()
	}
	return d, nil
}

// MulInt returns a × b as int2mul, int4mul and int8mul do, with AddInt's
// errors.
func MulInt[T Int](a, b T) (T, error) {
	p := a * b
	m := minInt[T]()
	if a != 0 && (p/a != b || (a == -1 && b == m) || (b == -1 && a == m)) {
		return 0, rangeError[T]()
	}
	return p, nil
}

// DivInt returns a / b truncated toward zero (7/2 = 3, -7/2 = -3) as
// int2div, int4div and int8div do: 22012 "division by zero" when b is 0,
// and AddInt's 22003 error for the smallest value divided by -1.
func DivInt[T Int](a, b T) (T, error) {
	if b == 0 {
		return 0, errDivByZero()
	}
	if b == -1 {
		return NegInt(a)
	}
	return a / b, nil
}

// ModInt returns the remainder a % b, with the sign of a (-7 % 2 = -1,
// 7 % -2 = 1), as int2mod, int4mod and int8mod do: 22012 "division by
// zero" when b is 0; the smallest value % -1 is 0, no error.
func ModInt[T Int](a, b T) (T, error) {
	if b == 0 {
		return 0, errDivByZero()
	}
	if b == -1 {
		return 0, nil
	}
	return a % b, nil
}

// NegInt returns -a as int2um, int4um and int8um do, with AddInt's error
// for the smallest value.
func NegInt[T Int](a T) (T, error) {
	if a == minInt[T]() {
		return 0, rangeError[T]()
	}
	return -a, nil
}
