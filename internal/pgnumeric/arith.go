package pgnumeric

import (
	"errors"
	"math"
	"math/big"
)

// aligned returns the coefficients of a and b (finite) at the larger of
// their display scales, and that scale.
func aligned(a, b Decimal) (x, y *big.Int, scale int) {
	x, y = a.c(), b.c()
	switch {
	case a.dscale < b.dscale:
		x = new(big.Int).Mul(x, pow10(int(b.dscale-a.dscale)))
	case a.dscale > b.dscale:
		y = new(big.Int).Mul(y, pow10(int(a.dscale-b.dscale)))
	}
	return x, y, int(max(a.dscale, b.dscale))
}

// Add returns a + b as numeric_add (add_var) computes it: exact, with the
// larger of the two display scales (1.5 + 2.25 = 3.75, 1.50 + 1.5 =
// 3.00). NaN plus anything is NaN; Infinity + -Infinity is NaN; otherwise
// an infinite operand gives that infinity. The only error is 22003 when
// the sum is 10^131072 or more in absolute value.
func (a Decimal) Add(b Decimal) (Decimal, error) {
	if a.form != finite || b.form != finite {
		switch {
		case a.form == nan || b.form == nan:
			return NaN(), nil
		case a.form == pinf && b.form == ninf, a.form == ninf && b.form == pinf:
			return NaN(), nil
		case a.form != finite:
			return a, nil
		}
		return b, nil
	}
	if a.coef == nil && b.coef == nil {
		if x, y, scale, ok := aligned64(a, b); ok {
			if r, ok := add64(x, y); ok {
				return Decimal{small: r, dscale: scale}, nil
			}
		}
	}
	x, y, scale := aligned(a, b)
	return result(new(big.Int).Add(x, y), scale)
}

// Sub returns a - b as numeric_sub (sub_var) computes it: exact, with the
// larger of the two display scales. NaN minus anything (or anything minus
// NaN) is NaN; Infinity - Infinity and -Infinity - -Infinity are NaN;
// otherwise an infinite a gives a, and an infinite b gives its negation.
// The only error is 22003 on overflow.
func (a Decimal) Sub(b Decimal) (Decimal, error) {
	return a.Add(b.Neg())
}

// Neg returns -a as numeric_uminus does: the display scale is kept, zero
// stays zero (there is no -0), NaN stays NaN, and the infinities swap.
func (a Decimal) Neg() Decimal {
	switch a.form {
	case pinf:
		return Inf(-1)
	case ninf:
		return Inf(1)
	case nan:
		return a
	}
	if a.coef == nil {
		if a.small != math.MinInt64 {
			return Decimal{small: -a.small, dscale: a.dscale}
		}
		return Decimal{coef: new(big.Int).Neg(a.c()), dscale: a.dscale}
	}
	return mk(new(big.Int).Neg(a.coef), a.dscale)
}

// Mul returns a × b as numeric_mul (mul_var) computes it: the exact
// product, whose display scale is the sum of the operands' (1.5 × 2.25 =
// 3.375, 1.10 × 2 = 2.20), except that a scale above 16383 is rounded
// (half away from zero) to 16383. NaN times anything is NaN, an infinity
// times zero is NaN, and otherwise an infinite operand gives an infinity
// with the sign of the product of the signs. The only error is 22003 when
// the product is 10^131072 or more in absolute value.
func (a Decimal) Mul(b Decimal) (Decimal, error) {
	if a.form != finite || b.form != finite {
		if a.form == nan || b.form == nan {
			return NaN(), nil
		}
		s := a.Sign() * b.Sign()
		if s == 0 {
			return NaN(), nil
		}
		return Inf(s), nil
	}
	scale := int(a.dscale + b.dscale)
	if a.coef == nil && b.coef == nil && scale <= MaxScale {
		if p, ok := mul64(a.small, b.small); ok {
			return Decimal{small: p, dscale: int32(scale)}, nil
		}
	}
	p := new(big.Int).Mul(a.c(), b.c())
	if scale > MaxScale {
		p = roundDiv(p, pow10(scale-MaxScale))
		scale = MaxScale
	}
	return result(p, scale)
}

// roundDiv returns x / y rounded to the nearest integer, halves away from
// zero (the rounding of round_var and div_var). y must not be 0.
func roundDiv(x, y *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(x, y, new(big.Int))
	if r.Sign() == 0 {
		return q
	}
	r.Abs(r).Lsh(r, 1)
	if r.CmpAbs(y) >= 0 {
		if x.Sign() == y.Sign() {
			q.Add(q, big.NewInt(1))
		} else {
			q.Sub(q, big.NewInt(1))
		}
	}
	return q
}

// nbaseLead returns the weight and the first digit of a non-zero finite d
// in PostgreSQL's base-10000 representation (digits in 0..9999, the point
// between two digits): d's leading digit group is first·10000^weight.
// It returns 0, 0 for zero.
func nbaseLead(d Decimal) (weight, first int) {
	c := d.c()
	n := numDigits(c)
	if n == 0 {
		return 0, 0
	}
	e := n - 1 - int(d.dscale) // 10^e is the leading decimal digit's place
	weight = e >> 2            // floor(e / 4)
	k := e - 4*weight + 1      // decimal digits in the leading group
	abs := new(big.Int).Abs(c)
	if n >= k {
		abs.Quo(abs, pow10(n-k))
	} else {
		abs.Mul(abs, pow10(k-n))
	}
	return weight, int(abs.Int64())
}

// DivScale returns the display scale of a / b for finite a and b, as
// select_div_scale chooses it: 16 minus 4 times an estimate of the
// quotient's base-10000 weight (the difference of the operands'
// base-10000 weights, less one when a's first base-10000 digit is not
// greater than b's; a zero operand has weight 0 and first digit 0), then
// at least the scale of each operand, at least 0, and at most 1000.
//
// So the quotient gets at least 16 significant digits, but the count is
// in base-10000 digits: 1/3 has scale 20 (0.33333333333333333333), 10/3
// has 16 and 10000/3 has 16, 0/7 has 20 (0.00000000000000000000).
func DivScale(a, b Decimal) int {
	w1, f1 := nbaseLead(a)
	w2, f2 := nbaseLead(b)
	qweight := w1 - w2
	if f1 <= f2 {
		qweight--
	}
	s := MinSigDigits - 4*qweight
	s = max(s, int(a.dscale), int(b.dscale), 0)
	return min(s, MaxDivScale)
}

// Div returns a / b as numeric_div (div_var with the scale from
// select_div_scale, see DivScale) computes it: the exact quotient rounded
// half away from zero to DivScale(a, b) digits after the point (2/3 =
// 0.66666666666666666667, -2/3 = -0.66666666666666666667).
//
// Special values: NaN with anything is NaN, even NaN / 0; an infinity
// divided by an infinity is NaN; an infinity divided by a finite non-zero
// value is an infinity with the sign of the product of the signs; a finite
// value divided by an infinity is 0 (scale 0).
//
// Errors: 22012 "division by zero" when b is zero (0/0 and Infinity/0
// included), and 22003 when the quotient is 10^131072 or more in absolute
// value.
func (a Decimal) Div(b Decimal) (Decimal, error) {
	if a.form == nan || b.form == nan {
		return NaN(), nil
	}
	if a.form != finite {
		if b.form != finite {
			return NaN(), nil
		}
		if b.c().Sign() == 0 {
			return Decimal{}, errDivByZero()
		}
		return Inf(a.Sign() * b.Sign()), nil
	}
	if b.form != finite {
		return Decimal{}, nil
	}
	if b.c().Sign() == 0 {
		return Decimal{}, errDivByZero()
	}
	rscale := DivScale(a, b)
	// a/b·10^rscale = ca·10^(rscale-da+db) / cb.
	x, y := a.c(), b.c()
	if sh := rscale - int(a.dscale) + int(b.dscale); sh >= 0 {
		x = new(big.Int).Mul(x, pow10(sh))
	} else {
		y = new(big.Int).Mul(y, pow10(-sh))
	}
	return result(roundDiv(x, y), rscale)
}

func errDivByZero() error { return pgError(CodeDivisionByZero, "division by zero") }

// Cmp compares a and b as cmp_numerics does for the numeric comparison
// operators, ORDER BY, min and max: it returns -1, 0 or +1 for a < b,
// a = b, a > b. The display scale does not matter (1.5 = 1.50).
// -Infinity is below every other value, +Infinity above every finite
// value, and NaN above everything, +Infinity included; NaN equals NaN.
func (a Decimal) Cmp(b Decimal) int {
	rank := func(d Decimal) int {
		switch d.form {
		case ninf:
			return -1
		case pinf:
			return 1
		case nan:
			return 2
		}
		return 0
	}
	ra, rb := rank(a), rank(b)
	switch {
	case ra < rb:
		return -1
	case ra > rb:
		return 1
	case ra != 0:
		return 0
	}
	if a.coef == nil && b.coef == nil {
		if x, y, _, ok := aligned64(a, b); ok {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	x, y, _ := aligned(a, b)
	return x.Cmp(y)
}

// Round returns a rounded to scale digits after the decimal point, as
// numeric_round (round(numeric, integer), with round_var) does: halves
// are rounded away from zero, and the result has display scale scale
// (more digits than a has are zeros: round(1.5, 3) = 1.500), or 0 when
// scale is negative (round(1234.5, -2) = 1200). A scale above 16383 acts
// as 16383; a negative scale below the leading digit gives 0. NaN and
// the infinities are returned unchanged. round(numeric) is Round(0).
// The only error is 22003, when rounding up reaches 10^131072.
func (a Decimal) Round(scale int) (Decimal, error) {
	if a.form != finite {
		return a, nil
	}
	// Below -131073 the result is 0 anyway (|a| < 10^131072).
	scale = min(max(scale, -maxExp10-1), MaxScale)
	c, ds := a.c(), int(a.dscale)
	if scale >= ds {
		return result(new(big.Int).Mul(c, pow10(scale-ds)), scale)
	}
	// Drop ds-scale digits. A value below a tenth of the rounding unit
	// rounds to 0, which also keeps the powers of ten small.
	if numDigits(c) < ds-scale {
		return Decimal{dscale: int32(max(scale, 0))}, nil
	}
	q := roundDiv(c, pow10(ds-scale))
	if scale >= 0 {
		return result(q, scale)
	}
	return result(q.Mul(q, pow10(-scale)), 0)
}

// Sum accumulates sum(numeric) and avg(numeric) as the server's aggregate
// does (do_numeric_accum, accum_sum_add and accum_sum_final; numeric_sum
// and numeric_avg for the result): finite values are added exactly, with
// no overflow until the end, at the largest display scale of the finite
// inputs (sum(1.5, 2.25, 1) = 4.75), and NaN and the infinities are
// counted apart. Add the non-NULL values only (the aggregates skip NULLs).
// The zero Sum is empty and ready to use.
//
// sum(int8) and avg(int8) accumulate the same way (FromInt64), as do
// avg(int2) and avg(int4), whose int8 sum FromInt64 converts; sum(int2)
// and sum(int4) are bigint sums instead (AddInt).
type Sum struct {
	n               int64
	nan, pinf, ninf bool
	// The sum is acc + coef at scale dscale: acc takes what fits in an
	// int64, coef the rest.
	acc    int64
	coef   big.Int
	dscale int32
}

// Add adds a non-NULL value to s.
func (s *Sum) Add(d Decimal) {
	s.n++
	switch d.form {
	case nan:
		s.nan = true
		return
	case pinf:
		s.pinf = true
		return
	case ninf:
		s.ninf = true
		return
	}
	if d.dscale > s.dscale {
		if acc, ok := scaleUp64(s.acc, d.dscale-s.dscale); ok {
			s.acc = acc
		} else {
			s.spill()
		}
		s.coef.Mul(&s.coef, pow10(int(d.dscale-s.dscale)))
		s.dscale = d.dscale
	}
	if d.coef == nil {
		if x, ok := scaleUp64(d.small, s.dscale-d.dscale); ok {
			if r, ok := add64(s.acc, x); ok {
				s.acc = r
				return
			}
		}
	}
	c := d.c()
	if d.dscale < s.dscale {
		c = new(big.Int).Mul(c, pow10(int(s.dscale-d.dscale)))
	}
	s.coef.Add(&s.coef, c)
}

// spill moves acc into coef.
func (s *Sum) spill() {
	s.coef.Add(&s.coef, big.NewInt(s.acc))
	s.acc = 0
}

// Merge adds the values added to o to s, as if they had been added to s
// (the combine step of a parallel aggregate: numeric_combine).
func (s *Sum) Merge(o *Sum) {
	s.n += o.n
	s.nan = s.nan || o.nan
	s.pinf = s.pinf || o.pinf
	s.ninf = s.ninf || o.ninf
	if o.dscale > s.dscale {
		s.spill()
		s.coef.Mul(&s.coef, pow10(int(o.dscale-s.dscale)))
		s.dscale = o.dscale
	}
	c := new(big.Int).Add(&o.coef, big.NewInt(o.acc))
	if o.dscale < s.dscale {
		c.Mul(c, pow10(int(s.dscale-o.dscale)))
	}
	s.coef.Add(&s.coef, c)
}

// Count returns the number of values added: count(x) for the same rows.
func (s *Sum) Count() int64 { return s.n }

// Result returns sum(x) as numeric_sum does: ok is false (SQL NULL) when
// no value was added; otherwise NaN if a NaN was added or both infinities
// were, an infinity if only that infinity was added, and else the exact sum
// at the largest display scale of the values. The only error is 22003 when
// the sum is out of range (intermediate sums may be, as on the server).
func (s *Sum) Result() (sum Decimal, ok bool, err error) {
	switch {
	case s.n == 0:
		return Decimal{}, false, nil
	case s.nan || (s.pinf && s.ninf):
		return NaN(), true, nil
	case s.pinf:
		return Inf(1), true, nil
	case s.ninf:
		return Inf(-1), true, nil
	}
	d, err := result(new(big.Int).Add(&s.coef, big.NewInt(s.acc)), int(s.dscale))
	return d, true, err
}

// Avg returns avg(x) as numeric_avg does: Avg(Result(), Count()), with
// ok false (SQL NULL) when no value was added.
func (s *Sum) Avg() (avg Decimal, ok bool, err error) {
	sum, ok, err := s.Result()
	if !ok || err != nil {
		return Decimal{}, ok, err
	}
	avg, err = Avg(sum, s.n)
	return avg, true, err
}

// Avg returns avg(x) from sum(x) and count(x) > 0 (the count of all
// non-NULL values, NaN and infinities included) as numeric_avg computes
// it: sum / count with numeric division (Div, so with DivScale's scale:
// avg(1.5, 2.25) = 3.75 / 2 = 1.8750000000000000), or sum itself when it
// is NaN or an infinity. avg(int2), avg(int4) and avg(int8) are
// Avg(FromInt64(sum), count) (int2_avg_accum, int4_avg_accum and
// int8_avg: the same numeric division). A count <= 0 is an error that is
// not PostgreSQL's: the average of no rows is NULL.
func Avg(sum Decimal, count int64) (Decimal, error) {
	if count <= 0 {
		return Decimal{}, errors.New("pgnumeric: average of no values")
	}
	if sum.form != finite {
		return sum, nil
	}
	return sum.Div(FromInt64(count))
}
