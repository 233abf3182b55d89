package pgnumeric

import "math/big"

// Trunc returns a truncated (toward zero) to scale digits after the
// decimal point, as numeric_trunc (trunc(numeric, integer)) does: the
// display scale is scale (more digits than a has are zeros), or 0 when
// scale is negative. NaN and the infinities are returned unchanged.
// trunc(numeric) is Trunc(0).
func (a Decimal) Trunc(scale int) (Decimal, error) {
	return a.cut(scale, (*big.Int).Quo)
}

// Ceil returns the smallest integer not below a (numeric_ceil), with
// display scale 0.
func (a Decimal) Ceil() (Decimal, error) {
	return a.cut(0, func(q, x, y *big.Int) *big.Int {
		q.Quo(x, y)
		if x.Sign() > 0 && new(big.Int).Mul(q, y).Cmp(x) != 0 {
			q.Add(q, big.NewInt(1))
		}
		return q
	})
}

// Floor returns the largest integer not above a (numeric_floor), with
// display scale 0.
func (a Decimal) Floor() (Decimal, error) {
	return a.cut(0, func(q, x, y *big.Int) *big.Int {
		q.Quo(x, y)
		if x.Sign() < 0 && new(big.Int).Mul(q, y).Cmp(x) != 0 {
			q.Sub(q, big.NewInt(1))
		}
		return q
	})
}

// cut drops the digits of a beyond scale, the quotient by the dropped
// power of ten computed by div.
func (a Decimal) cut(scale int, div func(q, x, y *big.Int) *big.Int) (Decimal, error) {
	if a.form != finite {
		return a, nil
	}
	scale = min(max(scale, -maxExp10-1), MaxScale)
	c, ds := a.c(), int(a.dscale)
	if scale >= ds {
		return result(new(big.Int).Mul(c, pow10(scale-ds)), scale)
	}
	q := div(new(big.Int), c, pow10(ds-scale))
	if scale >= 0 {
		return result(q, scale)
	}
	return result(q.Mul(q, pow10(-scale)), 0)
}

// Abs returns |a| (numeric_abs): the display scale is kept; NaN stays
// NaN and both infinities become Infinity.
func (a Decimal) Abs() Decimal {
	if a.Sign() < 0 {
		return a.Neg()
	}
	return a
}

// Mod returns the remainder of a truncated division of a by b
// (numeric_mod): its sign is a's and its display scale the larger of the
// two. NaN if either is NaN or a is infinite; a if b is infinite; 22012
// when b is zero.
func (a Decimal) Mod(b Decimal) (Decimal, error) {
	switch {
	case a.form == nan || b.form == nan:
		return NaN(), nil
	case b.form == finite && b.c().Sign() == 0:
		return Decimal{}, errDivByZero()
	case a.form != finite:
		return NaN(), nil
	case b.form != finite:
		return a, nil
	}
	x, y, scale := aligned(a, b)
	return result(new(big.Int).Rem(x, y), scale)
}
