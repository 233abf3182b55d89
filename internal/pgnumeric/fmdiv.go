package pgnumeric

import (
	"math"
	"math/big"
	"strings"
)

// nbaseDigits returns |x| in PostgreSQL's base-10000 form, stripped of
// leading and trailing zero digits: digits d[0..n-1] with |x| = Σ
// d[i]·10000^(weight-i). Zero has no digits.
func nbaseDigits(x fixed) (d []int32, weight int) {
	if x.sign() == 0 {
		return nil, 0
	}
	// Scale the coefficient to a multiple of 4 decimal places.
	s4 := -floorDiv(-x.s, 4) * 4
	c := new(big.Int).Abs(x.c)
	if s4 > x.s {
		c.Mul(c, pow10(s4-x.s))
	}
	txt := c.Text(10)
	if pad := (4 - len(txt)%4) % 4; pad > 0 {
		txt = strings.Repeat("0", pad) + txt
	}
	n := len(txt) / 4
	d = make([]int32, 0, n)
	for i := 0; i < n; i++ {
		g := txt[4*i : 4*i+4]
		d = append(d, int32(g[0]-'0')*1000+int32(g[1]-'0')*100+int32(g[2]-'0')*10+int32(g[3]-'0'))
	}
	weight = n - 1 - s4/4
	// Leading groups are non-zero by construction; strip trailing ones.
	for len(d) > 0 && d[len(d)-1] == 0 {
		d = d[:len(d)-1]
	}
	return d, weight
}

// fromNBase returns the value of base-10000 digits d with the given
// weight (the first digit's), negated if neg.
func fromNBase(d []int32, weight int, neg bool) fixed {
	var b strings.Builder
	b.Grow(4 * len(d))
	for _, g := range d {
		b.WriteByte(byte('0' + g/1000))
		b.WriteByte(byte('0' + g/100%10))
		b.WriteByte(byte('0' + g/10%10))
		b.WriteByte(byte('0' + g%10))
	}
	c, _ := new(big.Int).SetString(b.String(), 10)
	if c == nil {
		c = new(big.Int)
	}
	if neg {
		c.Neg(c)
	}
	return fixed{c, 4 * (len(d) - 1 - weight)}
}

// divFast is div_var_fast(x, y, rscale) with rounding, for y != 0: the
// quotient of PostgreSQL's "FM" division, which computes the digits of
// the quotient to 4 base-10000 digits beyond rscale with floating-point
// estimates, ignores the digits of the operands beyond that precision
// and approximates the last digit, then rounds to rscale. The result is
// therefore not always x/y correctly rounded: when x/y lies within about
// 10^-16 of a unit of halfway (as quotients of short logarithms can), the
// side it falls on depends on these approximations, and this function
// reproduces them. A divisor of at most two base-10000 digits goes to
// div_var_int, which rounds exactly.
func divFast(x, y fixed, rscale int) fixed {
	yd, yw := nbaseDigits(y)
	if len(yd) <= 2 {
		return x.div(y, rscale)
	}
	xd, xw := nbaseDigits(x)
	if len(xd) == 0 {
		return fixedZero(rscale)
	}
	neg := (x.sign() < 0) != (y.sign() < 0)
	const nbase = 10000
	resWeight := xw - yw + 1
	divN := resWeight + 1 + (rscale+3)/4 + 4
	divN = max(divN, 4)
	div := make([]int32, divN+1)
	for i := 0; i < min(divN, len(xd)); i++ {
		div[i+1] = xd[i]
	}
	fdivisor := float64(yd[0])
	for i := 1; i < 4; i++ {
		fdivisor *= nbase
		if i < len(yd) {
			fdivisor += float64(yd[i])
		}
	}
	fdivisorInverse := 1.0 / fdivisor
	estimate := func(qi int) int32 {
		fdividend := float64(div[qi])
		for i := 1; i < 4; i++ {
			fdividend *= nbase
			if qi+i <= divN {
				fdividend += float64(div[qi+i])
			}
		}
		return truncQuotient(fdividend * fdivisorInverse)
	}
	const maxdivLimit = (math.MaxInt32 - math.MaxInt32/nbase - 1) / (nbase - 1)
	maxdiv := int32(1)
	qi := 0
	for ; qi < divN; qi++ {
		qdigit := estimate(qi)
		if qdigit != 0 {
			maxdiv += abs32(qdigit)
			if maxdiv > maxdivLimit {
				// Normalize the digits that the subtractions touched.
				carry := int32(0)
				for i := min(qi+len(yd)-2, divN); i > qi; i-- {
					div[i], carry = normDigit(div[i] + carry)
				}
				div[qi] += carry
				maxdiv = 1
				qdigit = estimate(qi)
				maxdiv += abs32(qdigit)
			}
			if qdigit != 0 {
				istop := min(len(yd), divN-qi+1)
				q16 := int32(int16(qdigit))
				for i := 0; i < istop; i++ {
					div[qi+i] -= q16 * yd[i]
				}
			}
		}
		// Fold the rest of this position into the next one (int32
		// arithmetic: an overflow here cancels out, as in C).
		div[qi+1] += div[qi] * nbase
		div[qi] = qdigit
	}
	// The last digit, from the remainder alone.
	fdividend := float64(div[qi])
	for i := 1; i < 4; i++ {
		fdividend *= nbase
	}
	div[qi] = truncQuotient(fdividend * fdivisorInverse)
	// Normalize into digits.
	res := make([]int32, divN+1)
	carry := int32(0)
	for i := divN; i >= 0; i-- {
		res[i], carry = normDigit(div[i] + carry)
	}
	return fromNBase(res, resWeight, neg).round(rscale)
}

// truncQuotient converts a quotient estimate to an int as div_var_fast
// does: truncated toward zero if non-negative, else truncated and less
// one (so -3.0 gives -4).
func truncQuotient(f float64) int32 {
	if f >= 0 {
		return int32(f)
	}
	return int32(f) - 1
}

// normDigit splits v into a digit 0..9999 and a carry, rounding the carry
// toward minus infinity.
func normDigit(v int32) (digit, carry int32) {
	switch {
	case v < 0:
		carry = -((-v - 1) / 10000) - 1
		return v - carry*10000, carry
	case v >= 10000:
		carry = v / 10000
		return v - carry*10000, carry
	}
	return v, 0
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}
