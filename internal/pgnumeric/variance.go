package pgnumeric

import "math/big"

// Variance returns var_pop, var_samp, stddev_pop or stddev_samp of n
// values whose sum is sumX and sum of squares sumX2, as
// numeric_stddev_internal computes them: ok is false (SQL NULL) for no
// values, or one value of a sample; NaN when any value was NaN or
// infinite (nonFinite); else (n·sumX2 − sumX²) / (n·n) or / (n·(n−1)),
// 0 when that numerator is not positive, divided at select_div_scale's
// scale (DivScale) and, for a standard deviation, its square root at
// the same scale.
func Variance(sumX, sumX2 Decimal, n int64, nonFinite, sample, stddev bool) (v Decimal, ok bool, err error) {
	if n == 0 || sample && n <= 1 {
		return Decimal{}, false, nil
	}
	if nonFinite {
		return NaN(), true, nil
	}
	// The products are exact at twice sumX's scale, as mul_var gives
	// them at that scale.
	sq, err := sumX.Mul(sumX)
	if err != nil {
		return Decimal{}, true, err
	}
	nx2, err := FromInt64(n).Mul(sumX2)
	if err != nil {
		return Decimal{}, true, err
	}
	num, err := nx2.Sub(sq)
	if err != nil {
		return Decimal{}, true, err
	}
	if num.Sign() <= 0 {
		return FromInt64(0), true, nil
	}
	m := n
	if sample {
		m = n - 1
	}
	den, err := FromInt64(n).Mul(FromInt64(m))
	if err != nil {
		return Decimal{}, true, err
	}
	v, err = num.Div(den)
	if err != nil || !stddev {
		return v, true, err
	}
	v, err = v.Sqrt(int(v.dscale))
	return v, true, err
}

// Sqrt returns the square root of a finite non-negative a rounded half
// up to rscale digits after the point, as sqrt_var does: the root
// truncated one digit further, then rounded.
func (a Decimal) Sqrt(rscale int) (Decimal, error) {
	// floor(sqrt(a)·10^(rscale+1)) = floor(sqrt(floor(c·10^e))) with
	// e = 2(rscale+1) − dscale.
	c := a.c()
	if e := 2*(rscale+1) - int(a.dscale); e >= 0 {
		c = new(big.Int).Mul(c, pow10(e))
	} else {
		c = new(big.Int).Quo(c, pow10(-e))
	}
	r := new(big.Int).Sqrt(c)
	r.Add(r, big.NewInt(5))
	r.Quo(r, big.NewInt(10))
	return result(r, rscale)
}

// SqrtNumeric returns sqrt(a) as numeric_sqrt computes it: at least 16
// significant digits (the scale from the base-10000 weight of a), at
// least a's scale, at most 1000; NaN for NaN, Infinity for Infinity, and
// 2201F for a negative a.
func (a Decimal) SqrtNumeric() (Decimal, error) {
	switch {
	case a.form == nan, a.form == pinf:
		return a, nil
	case a.form == ninf || a.Sign() < 0:
		return Decimal{}, pgError("2201F", "cannot take square root of a negative number")
	}
	weight, _ := nbaseLead(a)
	sweight := (weight+1)*4/2 - 1
	rscale := max(MinSigDigits-sweight, int(a.dscale), 0)
	return a.Sqrt(min(rscale, MaxDivScale))
}
