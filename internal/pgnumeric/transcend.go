package pgnumeric

import (
	"math"
	"math/big"
)

// The transcendental functions: ln, log, exp and power.
//
// PostgreSQL computes them in base 10000 with series, at working scales a
// few digits beyond the result scale, and rounds the result. Its result
// is usually the exact value rounded to the result scale, but not always:
// intermediate values are rounded too (ln_var reduces its argument with
// square roots rounded to a scale, power_var rounds ln(base)·exponent,
// log_var divides two rounded logarithms), and where a series or a
// quotient lands exactly or almost exactly halfway between two results
// (short arguments near 1 do that), which side it ends on depends on the
// working scale and on how each term was rounded.
//
// So this file follows PostgreSQL step by step wherever its roundings can
// show: the scales come from the same estimates (double arithmetic
// included); the square roots of ln_var's reduction, the terms of its
// series, exp_var's reduction, series and squarings, power_var's two
// passes and div_var_fast's approximate division are reproduced with
// the same roundings at the same scales. What is not reproduced exactly:
//
//   - mul_var's products are computed exactly, then rounded; mul_var
//     drops the partial products beyond a few guard digits, which
//     matters only when a product lies within some 10^-8 of a unit of
//     halfway;
//   - ln_var's series at working scales above maxLnSeriesScale, and the
//     integer powers of power_var_int, which are computed here to
//     enough precision to round them correctly: PostgreSQL's results
//     there are within about 10^-8 of a unit of the exact value, so the
//     two differ only when the exact value lies that close to halfway;
//   - C's log() in estimate_ln_dweight is Go's math.Log, which differs
//     from glibc's by one unit in the last place for a fraction of a
//     percent of the arguments; the estimate changes only if the
//     logarithm is within that of a power of ten.

// SQLSTATEs of the errors of the transcendental functions.
const (
	CodeInvalidArgumentForLog   = "2201E"
	CodeInvalidArgumentForPower = "2201F"
)

// maxResultScale is NUMERIC_MAX_RESULT_SCALE (numeric.h), the bound of
// the estimates of exp and power.
const maxResultScale = 2000

// log2of10 is log2(10).
const log2of10 = 3.321928094887362

func errLogZero() error {
	return pgError(CodeInvalidArgumentForLog, "cannot take logarithm of zero")
}

func errLogNegative() error {
	return pgError(CodeInvalidArgumentForLog, "cannot take logarithm of a negative number")
}

func errZeroNegativePower() error {
	return pgError(CodeInvalidArgumentForPower, "zero raised to a negative power is undefined")
}

func errComplexPower() error {
	return pgError(CodeInvalidArgumentForPower, "a negative number raised to a non-integer power yields a complex result")
}

// fixed is an exact decimal c·10^-s. Unlike a Decimal's display scale, s
// may be negative: PostgreSQL rounds some intermediate values to tens,
// thousands, ... (the square roots that reduce a large logarithm
// argument).
type fixed struct {
	c *big.Int
	s int
}

func fixedOf(d Decimal) fixed { return fixed{d.c(), int(d.dscale)} }

func fixedInt(v int64, s int) fixed { return fixed{big.NewInt(v), s} }

var (
	fixedPoint9    = fixedInt(9, 1)
	fixedOnePoint1 = fixedInt(11, 1)
	fixedOne       = fixedInt(1, 0)
	bigFloatHalf   = big.NewFloat(0.5)
	bigFloatOne    = big.NewFloat(1)
)

// fixedZero returns 0 at scale s.
func fixedZero(s int) fixed { return fixed{new(big.Int), s} }

func (x fixed) sign() int { return x.c.Sign() }

// lead returns the decimal exponent of the leading digit of x != 0: x has
// the magnitude 10^lead.
func (x fixed) lead() int { return numDigits(x.c) - 1 - x.s }

// weight returns the base-10000 weight of x != 0 (NumericVar.weight of x
// stripped): floor(lead / 4).
func (x fixed) weight() int { return floorDiv(x.lead(), 4) }

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// align returns the coefficients of x and y at the larger of their scales.
func (x fixed) align(y fixed) (a, b *big.Int, s int) {
	a, b = x.c, y.c
	switch {
	case x.s < y.s:
		a = new(big.Int).Mul(a, pow10(y.s-x.s))
	case x.s > y.s:
		b = new(big.Int).Mul(b, pow10(x.s-y.s))
	}
	return a, b, max(x.s, y.s)
}

func (x fixed) cmp(y fixed) int {
	sx, sy := x.sign(), y.sign()
	if sx != sy {
		if sx < sy {
			return -1
		}
		return 1
	}
	if sx != 0 {
		// Different magnitudes decide without aligning the scales.
		if lx, ly := x.lead(), y.lead(); lx != ly {
			if (lx < ly) == (sx > 0) {
				return -1
			}
			return 1
		}
	}
	a, b, _ := x.align(y)
	return a.Cmp(b)
}

func (x fixed) sub(y fixed) fixed {
	a, b, s := x.align(y)
	return fixed{new(big.Int).Sub(a, b), s}
}

func (x fixed) add(y fixed) fixed {
	a, b, s := x.align(y)
	return fixed{new(big.Int).Add(a, b), s}
}

func (x fixed) mul(y fixed) fixed {
	return fixed{new(big.Int).Mul(x.c, y.c), x.s + y.s}
}

// round returns x rounded half away from zero to scale r, as round_var
// does (r may be negative).
func (x fixed) round(r int) fixed {
	if r >= x.s {
		return fixed{new(big.Int).Mul(x.c, pow10(r-x.s)), r}
	}
	if numDigits(x.c) < x.s-r {
		// |x| is below a tenth of the unit of scale r.
		return fixed{new(big.Int), r}
	}
	return fixed{roundDiv(x.c, pow10(x.s-r)), r}
}

// isInteger reports whether x has no non-zero digit after the point.
func (x fixed) isInteger() bool {
	if x.s <= 0 || x.c.Sign() == 0 {
		return true
	}
	if numDigits(x.c) <= x.s {
		return false
	}
	return new(big.Int).Rem(x.c, pow10(x.s)).Sign() == 0
}

// float64 converts x to the nearest double, as numericvar_to_double_no_
// overflow does with strtod: ±Inf beyond the range of a double, 0 or a
// subnormal below it. (strconv.ParseFloat is no substitute: it misreads
// mantissas of more than 800 digits.)
func (x fixed) float64() float64 {
	z := new(big.Float).SetPrec(53)
	c := new(big.Float).SetInt(x.c)
	switch {
	case x.s > 0:
		z.Quo(c, new(big.Float).SetInt(pow10(x.s)))
	case x.s < 0:
		z.Mul(c, new(big.Float).SetInt(pow10(-x.s)))
	default:
		z.Set(c)
	}
	f, _ := z.Float64()
	return f
}

// bigFloat returns x as a big.Float of precision prec (relative error
// below 2^-prec).
func (x fixed) bigFloat(prec uint) *big.Float {
	f := new(big.Float).SetPrec(prec + 8).SetInt(x.c)
	if x.s > 0 {
		f.Quo(f, floatPow10(x.s, prec+8))
	} else if x.s < 0 {
		f.Mul(f, floatPow10(-x.s, prec+8))
	}
	return f.SetPrec(prec)
}

// sqrtFloat returns sqrt(x) with a relative error below 2^-prec.
// big.Float.Sqrt may lose some 100 bits of the precision it is asked for
// (its last Newton step starts from too few correct bits), so it works
// with 256 bits more.
func sqrtFloat(x *big.Float, prec uint) *big.Float {
	z := new(big.Float).SetPrec(prec + 256).Sqrt(x)
	return z.SetPrec(prec)
}

// floatPow10 returns 10^n (n >= 0) with a relative error below 2^-prec.
// It is rounded (a long exact divisor would cost a long division) and,
// for large n, computed in floating point (an exact 10^n would cost a
// long computation).
func floatPow10(n int, prec uint) *big.Float {
	if n < 1000 {
		return new(big.Float).SetPrec(prec).SetInt(pow10(n))
	}
	// About 2·log2(n) roundings of 2^-(prec+16).
	z := new(big.Float).SetPrec(prec + 16).SetInt64(1)
	b := new(big.Float).SetPrec(prec + 16).SetInt64(10)
	for ; n > 0; n >>= 1 {
		if n&1 != 0 {
			z.Mul(z, b)
		}
		if n > 1 {
			b.Mul(b, b)
		}
	}
	return z.SetPrec(prec)
}

// decimal returns x (scale s >= 0) as a Decimal, with make_result's
// overflow check.
func (x fixed) decimal() (Decimal, error) {
	return result(x.c, x.s)
}

// estimateLnDweight is estimate_ln_dweight: an estimate of the decimal
// exponent of the leading digit of ln(x), 0 for x <= 0. For 0.9 <= x <=
// 1.1 it is that of x-1 (0 for x = 1); otherwise it is the truncation
// toward zero of log10|ln(x)|, with ln(x) estimated in double precision
// from the first two base-10000 digits of x.
func estimateLnDweight(x fixed) int {
	if x.sign() <= 0 {
		return 0
	}
	if x.cmp(fixedPoint9) >= 0 && x.cmp(fixedOnePoint1) <= 0 {
		u := x.sub(fixedOne)
		if u.sign() == 0 {
			return 0
		}
		return u.lead()
	}
	w := x.weight()
	// g holds the first two base-10000 digits, d0·10000 + d1.
	g := new(big.Int)
	if e := x.s + 4*(w-1); e >= 0 {
		g.Quo(x.c, pow10(e))
	} else {
		g.Mul(x.c, pow10(-e))
	}
	digits, dweight := g.Int64(), 4*(w-1)
	// A single base-10000 digit (the others are zero) counts alone.
	if e := x.s + 4*w; e <= 0 || new(big.Int).Rem(x.c, pow10(e)).Sign() == 0 {
		digits, dweight = digits/10000, 4*w
	}
	// The conversion keeps the product apart from the sum, as C does (no
	// fused multiply-add).
	lnv := math.Log(float64(digits)) + float64(float64(dweight)*2.302585092994046)
	return truncLog10(math.Abs(lnv))
}

// truncLog10 returns (int) log10(v) for v > 0: log10(v) rounded to a
// double, as C's log10 returns it, then truncated toward zero. Near an
// integer k the double is computed as k + (log10(v) - k), the difference
// from v/10^k in high precision, which rounds as a correctly rounded
// log10 does: log10(1000) and log10(0.1) are exactly 3 and -1 (Go's
// math.Log10(1000) is 2.9999999999999996), and so is log10 of a double
// within half a unit in the last place of them.
func truncLog10(v float64) int {
	r := math.Log10(v)
	k := math.Round(r)
	if math.Abs(r-k) > 1e-9 {
		return int(r)
	}
	// log10(v) - k = ln(v/10^k) / ln(10), with v/10^k within 1e-8 of 1.
	q := new(big.Float).SetPrec(256).SetFloat64(v)
	p := new(big.Float).SetPrec(256).SetInt(pow10(int(math.Abs(k))))
	if k >= 0 {
		q.Quo(q, p)
	} else {
		q.Mul(q, p)
	}
	u, _ := q.Sub(q, bigFloatOne).Float64()
	d := math.Log1p(u) / math.Ln10
	return int(k + d)
}

// sqrtVar is sqrt_var(x, r) for x > 0, r possibly negative: the square
// root truncated one decimal digit beyond scale r, then rounded half up to
// scale r. (sqrt_var truncates more digits beyond and ignores the input's
// digits beyond those it needs, which gives the same digit.)
func sqrtVar(x fixed, r int) fixed {
	q := sqrtFloor(x, r+1)
	q.Add(q, big.NewInt(5))
	q.Quo(q, big.NewInt(10))
	return fixed{q, r}
}

// sqrtFloor returns floor(sqrt(x)·10^k) for x > 0. Long results come from
// a binary approximation when it decides the floor, which saves the
// division of long numbers that an exact integer square root takes.
func sqrtFloor(x fixed, k int) *big.Int {
	// The result has about digits digits.
	if digits := x.lead()/2 + k + 2; digits > 40 || x.c.BitLen() > 1000 {
		prec := uint(float64(max(digits, 0))*log2of10) + 64
		v := sqrtFloat(x.bigFloat(prec+8), prec+8)
		if k >= 0 {
			v.Mul(v, floatPow10(k, prec+8))
		} else {
			v.Quo(v, floatPow10(-k, prec+8))
		}
		// v has a relative error below 2^-(prec+4): the floor is known
		// unless the fraction is that close to 0 or 1.
		q, _ := v.Int(nil)
		frac := new(big.Float).Sub(v, new(big.Float).SetInt(q))
		e := v.MantExp(nil) - int(prec)
		lo := new(big.Float).SetMantExp(bigFloatOne, e)
		hi := new(big.Float).Sub(bigFloatOne, lo)
		if frac.Cmp(lo) > 0 && frac.Cmp(hi) < 0 {
			return q
		}
	}
	n := new(big.Int)
	if e := 2*k - x.s; e >= 0 {
		n.Mul(x.c, pow10(e))
	} else {
		n.Quo(x.c, pow10(-e))
	}
	return n.Sqrt(n)
}

// lnVar is ln_var(x, rscale): ln(x) rounded to rscale. It reduces x into
// (0.9, 1.1) with square roots at ln_var's scales, exactly as ln_var does,
// then follows ln_var's series (lnSeries) or, at large scales, rounds
// 2^n·ln(reduced x) correctly.
func lnVar(x fixed, rscale int) (fixed, error) {
	switch x.sign() {
	case 0:
		return fixed{}, errLogZero()
	case -1:
		return fixed{}, errLogNegative()
	}
	n := 0
	for x.cmp(fixedPoint9) <= 0 {
		x = sqrtVar(x, rscale-2*x.weight()+8)
		n++
	}
	for x.cmp(fixedOnePoint1) >= 0 {
		x = sqrtVar(x, rscale-2*x.weight()+8)
		n++
	}
	if x.cmp(fixedOne) == 0 {
		return fixedZero(rscale), nil
	}
	if lr := rscale + int(float64(n+1)*0.301029995663981) + 8; lr <= maxLnSeriesScale {
		return lnSeries(x, n, lr, rscale), nil
	}
	bits := int(float64(max(rscale, 0))*log2of10) + n + 40
	var c *big.Int
	for try := 0; ; try++ {
		l := lnNear1(x, bits)
		l.SetMantExp(l, n)
		var ok bool
		c, ok = roundFloat(l, rscale, n-bits+1)
		if ok || try == 3 {
			break
		}
		bits += 64 << try
	}
	return fixed{c, rscale}, nil
}

// maxLnSeriesScale bounds the working scale up to which lnVar follows
// ln_var's series step by step. The series takes about scale/2.5 terms,
// each a product at the working scale: beyond a few thousand digits
// lnVar computes the logarithm in binary instead and rounds it correctly,
// which differs from PostgreSQL's result only in the rare cases where the
// logarithm lies within 10^-8 of a unit of halfway.
const maxLnSeriesScale = 4000

// lnSeries follows ln_var after the range reduction, for x in (0.9, 1.1)
// after n square roots: with z = (x-1)/(x+1) rounded to the working scale
// lr, the series z + z³/3 + z⁵/5 + ..., each term rounded to lr, until a
// term rounds to 0 or falls below the working precision, then the sum
// times 2^(n+1) rounded to rscale.
func lnSeries(x fixed, n, lr, rscale int) fixed {
	z := divFast(x.sub(fixedOne), x.add(fixedOne), lr)
	res, pow := z, z
	z2 := z.mul(z).round(lr)
	for ni := int64(3); ; ni += 2 {
		pow = pow.mul(z2).round(lr)
		elem := pow.divInt(ni, lr)
		if elem.sign() == 0 {
			break
		}
		res = res.add(elem)
		if elem.weight() < res.weight()-lr/2 {
			break
		}
	}
	fact := fixed{new(big.Int).Lsh(big.NewInt(1), uint(n+1)), 0}
	return res.mul(fact).round(rscale)
}

// lnNear1 returns ln(y) for 0.9 < y < 1.1 with an absolute error below
// 2^-bits, from the series 2·atanh(z) = 2(z + z³/3 + z⁵/5 + ...) with z =
// (y-1)/(y+1), after j more square roots (computed in binary) when that
// saves terms.
func lnNear1(y fixed, bits int) *big.Float {
	u := y.sub(fixedOne)
	if u.sign() == 0 {
		return new(big.Float)
	}
	// |z| is about |u|/2 < 2^lz.
	lz := int(math.Ceil(float64(u.lead()+1)*log2of10)) - 1
	// A square root costs about 10 products at full precision, a term
	// about one: the least work makes -lz+j about sqrt(bits/19).
	j := 0
	if bits/(2*max(-lz, 1)) > 24 {
		j = min(max(int(math.Sqrt(float64(bits)/19))+lz, 0), 400)
	}
	var z *big.Float
	var prec uint
	if j == 0 {
		// The values are below 2^lz: that many bits fewer suffice.
		prec = uint(max(bits+64+lz, 64))
		uf := u.bigFloat(prec + 8)
		df := u.add(fixedInt(2, 0)).bigFloat(prec + 8)
		z = new(big.Float).SetPrec(prec).Quo(uf, df)
	} else {
		prec = uint(bits + j + 64)
		yf := y.bigFloat(prec)
		for range j {
			yf = sqrtFloat(yf, prec)
		}
		num := new(big.Float).SetPrec(prec).Sub(yf, bigFloatOne)
		den := new(big.Float).SetPrec(prec).Add(yf, bigFloatOne)
		z = new(big.Float).SetPrec(prec).Quo(num, den)
	}
	z2 := new(big.Float).SetPrec(prec).Mul(z, z)
	sum := new(big.Float).SetPrec(prec).Set(z)
	pow := new(big.Float).SetPrec(prec).Set(z)
	term := new(big.Float).SetPrec(prec)
	stop := -(bits + j + 8)
	for k := int64(3); ; k += 2 {
		pow.Mul(pow, z2)
		term.Quo(pow, new(big.Float).SetInt64(k))
		if term.Sign() == 0 || term.MantExp(nil) < stop {
			break
		}
		sum.Add(sum, term)
	}
	return sum.SetMantExp(sum, j+1)
}

// roundFloat rounds v, whose absolute error is below 2^errExp, half away
// from zero to scale r: it returns the coefficient of the result at scale
// r, and false when the error bound leaves it undecided (v is that close
// to halfway between two results).
func roundFloat(v *big.Float, r int, errExp int) (*big.Int, bool) {
	p := v.Prec() + 64
	t := new(big.Float).SetPrec(p)
	if r >= 0 {
		t.Mul(v, floatPow10(r, p))
	} else {
		t.Quo(v, floatPow10(-r, p))
	}
	q, _ := t.Int(nil)
	frac := new(big.Float).SetPrec(p).Sub(t, new(big.Float).SetInt(q))
	frac.Abs(frac)
	d := new(big.Float).SetPrec(p).Sub(frac, bigFloatHalf)
	// The error of t, with a margin for the roundings of t.
	e := errExp + int(math.Ceil(float64(r)*log2of10)) + 2
	ok := d.Sign() != 0 && d.MantExp(nil) > e
	if d.Sign() >= 0 {
		if v.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q, ok
}

// expVar is exp_var(x, rscale): e^x rounded to rscale, 22003 when x >=
// 6000 and 0 when x <= -6000 (the bounds exp_var checks on x converted to
// a double). It follows exp_var step by step, each rounding of
// exp_var at its scale: x divided by 2^ndiv2 (exact) so that it is at
// most 0.01 or so, the Taylor series 1 + x + x²/2 + ... with each term
// rounded to the working scale, then ndiv2 squarings each rounded to a
// scale that keeps the working number of significant digits. Exact
// products rounded stand for mul_var, whose truncated partial products
// only matter when a product lies within 10^-8 of a unit of halfway.
func expVar(x fixed, rscale int) (fixed, error) {
	val := x.float64()
	if math.Abs(val) >= maxResultScale*3 {
		if val > 0 {
			return fixed{}, overflowError()
		}
		return fixedZero(rscale), nil
	}
	dweight := int(val * 0.434294481903252)
	ndiv2 := 0
	if math.Abs(val) > 0.01 {
		ndiv2 = 1
		val /= 2
		for math.Abs(val) > 0.01 {
			ndiv2++
			val /= 2
		}
		x = x.divInt(1<<ndiv2, x.s+ndiv2)
	}
	sig := max(1+dweight+rscale+int(float64(ndiv2)*0.301029995663981), 0) + 8
	lr := sig - 1
	// Digits of x far beyond the working scale only reach the products'
	// digits that mul_var drops.
	xm := x
	if x.s > lr+30 {
		xm = x.round(lr + 30)
	}
	res := x.add(fixedOne)
	elem := x.mul(x).round(lr).divInt(2, lr)
	for ni := int64(3); elem.sign() != 0; ni++ {
		res = res.add(elem)
		elem = elem.mul(xm).round(lr).divInt(ni, lr)
	}
	for ; ndiv2 > 0; ndiv2-- {
		res = res.mul(res).round(max(sig-8*res.weight(), 0))
	}
	return res.round(rscale), nil
}

// divInt returns x/n rounded half away from zero to scale r, as
// div_var_int does with rounding.
func (x fixed) divInt(n int64, r int) fixed {
	num, den := x.c, big.NewInt(n)
	if sh := r - x.s; sh >= 0 {
		num = new(big.Int).Mul(num, pow10(sh))
	} else {
		den.Mul(den, pow10(-sh))
	}
	return fixed{roundDiv(num, den), r}
}

// div returns x/y rounded half away from zero to scale r (div_var and
// div_var_int with rounding).
func (x fixed) div(y fixed, r int) fixed {
	num, den := x.c, y.c
	if sh := r - x.s + y.s; sh >= 0 {
		num = new(big.Int).Mul(num, pow10(sh))
	} else {
		den = new(big.Int).Mul(den, pow10(-sh))
	}
	return fixed{roundDiv(num, den), r}
}

// clampScale bounds a result scale as the functions do: at least 0
// (NUMERIC_MIN_DISPLAY_SCALE), at most 1000 (NUMERIC_MAX_DISPLAY_SCALE).
func clampScale(s int) int { return min(max(s, 0), MaxDivScale) }

// Ln returns ln(a), the natural logarithm, as numeric_ln computes it. The
// result scale is 16 minus estimate_ln_dweight(a) (an estimate of the
// decimal exponent of the result's leading digit, so that the result has
// about 16 significant digits), at least a's scale, 0 to 1000: ln(2) =
// 0.6931471805599453, ln(1.0001) = 0.00009999500033330834, ln(1e100) =
// 230.25850929940457.
//
// Special values: NaN for NaN, Infinity for Infinity. Errors: 2201E
// "cannot take logarithm of zero" for 0, and 2201E "cannot take logarithm
// of a negative number" for a negative a or -Infinity.
func (a Decimal) Ln() (Decimal, error) {
	switch a.form {
	case nan, pinf:
		return a, nil
	case ninf:
		return Decimal{}, errLogNegative()
	}
	x := fixedOf(a)
	rscale := clampScale(max(MinSigDigits-estimateLnDweight(x), int(a.dscale)))
	r, err := lnVar(x, rscale)
	if err != nil {
		return Decimal{}, err
	}
	return r.decimal()
}

// Log10 returns the base-10 logarithm of a: SQL's log(numeric) and
// log10(numeric), which PostgreSQL defines as log(10, a). See LogBase for
// the result scale, the special values and the errors.
func (a Decimal) Log10() (Decimal, error) {
	return LogBase(FromInt64(10), a)
}

// LogBase returns the logarithm of x in base base, SQL's log(base, x), as
// numeric_log and log_var compute it: ln(x) / ln(base), each logarithm
// rounded to a scale that gives it 8 more significant digits than the
// result should have, the quotient rounded to the result scale. The
// result scale is 16 minus the difference of the estimate_ln_dweight
// estimates of ln(x) and ln(base) (about 16 significant digits), at least
// the scale of either argument, 0 to 1000: log(2, 8) = 3.0000000000000000,
// log(10, 2) = 0.3010299956639812, log(100, 10) = 0.5000000000000000.
//
// Special values: NaN if either is NaN; otherwise 0 for log(Infinity, x)
// with x finite, NaN for log(Infinity, Infinity), Infinity for log(base,
// Infinity) with base finite (even 1).
//
// Errors: 2201E "cannot take logarithm of a negative number" and "cannot
// take logarithm of zero" (for finite arguments base is checked first:
// log(0, -1) is of zero; with an infinite argument a negative one comes
// first: log(0, -Infinity) is of a negative number), and 22012 "division
// by zero" when ln(base) rounds to 0 at its scale: base 1, or a base so
// close to 1 that log_var's scale for ln(base) is too small for it
// (log(1.0000000001, 1 + 1e-2001)).
func LogBase(base, x Decimal) (Decimal, error) {
	if base.form != finite || x.form != finite {
		if base.form == nan || x.form == nan {
			return NaN(), nil
		}
		s1, s2 := base.Sign(), x.Sign()
		switch {
		case s1 < 0 || s2 < 0:
			return Decimal{}, errLogNegative()
		case s1 == 0 || s2 == 0:
			return Decimal{}, errLogZero()
		case base.form == pinf && x.form == pinf:
			return NaN(), nil
		case base.form == pinf:
			return Decimal{}, nil
		}
		return Inf(1), nil
	}
	b, n := fixedOf(base), fixedOf(x)
	bdw, ndw := estimateLnDweight(b), estimateLnDweight(n)
	rdw := ndw - bdw
	rscale := clampScale(max(MinSigDigits-rdw, int(base.dscale), int(x.dscale)))
	lnb, err := lnVar(b, max(rscale+rdw-bdw+8, 0))
	if err != nil {
		return Decimal{}, err
	}
	lnn, err := lnVar(n, max(rscale+rdw-ndw+8, 0))
	if err != nil {
		return Decimal{}, err
	}
	if lnb.sign() == 0 {
		return Decimal{}, errDivByZero()
	}
	return divFast(lnn, lnb, rscale).decimal()
}

// Exp returns e^a as numeric_exp computes it. The result scale is 16 minus
// the truncation of a·log10(e) (computed in double precision and bounded
// to ±2000), so that the result has about 16 significant digits, at least
// a's scale, 0 to 1000: exp(1) = 2.7182818284590452, exp(-10) =
// 0.00004539992976248485, exp(100) =
// 26881171418161354484126255515800135873611119.
//
// Special values: NaN for NaN, Infinity for Infinity, 0 for -Infinity.
// Errors: 22003 "value overflows numeric format" when a >= 6000 (as a
// double), even though e^a is in range up to a ≈ 301800; a <= -6000 gives
// 0 at the result scale.
func (a Decimal) Exp() (Decimal, error) {
	switch a.form {
	case nan, pinf:
		return a, nil
	case ninf:
		return Decimal{}, nil
	}
	x := fixedOf(a)
	val := x.float64() * 0.434294481903252
	val = min(max(val, -maxResultScale), maxResultScale)
	rscale := clampScale(max(MinSigDigits-int(val), int(a.dscale)))
	r, err := expVar(x, rscale)
	if err != nil {
		return Decimal{}, err
	}
	return r.decimal()
}

// Power returns a raised to the power b, SQL's power(a, b) and a ^ b, as
// numeric_power and power_var compute it. Results are rounded half away
// from zero.
//
// An integral b in the int32 range (2, 3.000, -5) takes the integer path
// (power_var_int): the result is a^b rounded to scale 16, or a's scale
// if larger, at most 1000: power(2, 10) = 1024.0000000000000000,
// power(2, -17) = 0.0000076293945313; a^0 is 1 at that scale, even 0^0.
//
// Otherwise the result is exp(b·ln(a)) (of |a|, negated if a < 0 and b is
// an odd integer), rounded to a scale that gives about 16 significant
// digits (16 minus the truncated decimal exponent of the result,
// estimated from a first low-precision b·ln(a)), at least the scale of a
// and of b, 0 to 1000: power(2, 0.5) = 1.4142135623730950, power(100,
// 1.5) = 1000.0000000000000. 0 to such a power is 0 with scale 16; a
// result below the rounding unit is 0 at the result scale, and 0 with
// scale 1000 when b·ln|a| is below -6020.
//
// Special values follow POSIX pow: NaN^0 = 1 and 1^NaN = 1, otherwise NaN
// with a NaN; 1^b = 1 and a^0 = 1 for infinite arguments; 0^b = 0 for b >
// 0; (-1)^±Infinity = 1; a^Infinity is Infinity for |a| > 1 and 0 for |a|
// < 1, a^-Infinity the reverse; Infinity^b is Infinity for b > 0, 0 for b
// < 0; (-Infinity)^b is 0 for b < 0, -Infinity for an odd integer b > 0,
// Infinity otherwise.
//
// Errors: 2201F "zero raised to a negative power is undefined" (0^-1,
// 0^-Infinity); 2201F "a negative number raised to a non-integer power
// yields a complex result" ((-8)^0.5, (-Infinity)^0.5; the infinities
// count as integers: (-2)^Infinity is Infinity); 22003 "value overflows
// numeric format" when the result is 10^131072 or more, and on the
// general path as soon as b·ln|a| is 6000 or more (power(10, 2700.5)
// fails, though 10^2700.5 would be in range).
func (a Decimal) Power(b Decimal) (Decimal, error) {
	if a.form != finite || b.form != finite {
		return powerSpecial(a, b)
	}
	if a.Sign() == 0 && b.Sign() < 0 {
		return Decimal{}, errZeroNegativePower()
	}
	x, y := fixedOf(a), fixedOf(b)
	if y.isInteger() {
		// Integral exponents in the int32 range take power_var_int.
		if n, ok := fixedInt64(y); ok && n >= math.MinInt32 && n <= math.MaxInt32 {
			rscale := clampScale(max(MinSigDigits, int(a.dscale)))
			r, err := powerInt(x, n, rscale)
			if err != nil {
				return Decimal{}, err
			}
			return r.decimal()
		}
	}
	if x.sign() == 0 {
		return Decimal{dscale: MinSigDigits}, nil
	}
	neg := false
	if x.sign() < 0 {
		if !y.isInteger() {
			return Decimal{}, errComplexPower()
		}
		neg = new(big.Int).Quo(y.c, pow10(max(y.s, 0))).Bit(0) == 1
		x = fixed{new(big.Int).Neg(x.c), x.s}
	}
	r, err := powerGeneral(x, y, int(a.dscale), int(b.dscale))
	if err != nil {
		return Decimal{}, err
	}
	if neg {
		r.c.Neg(r.c)
	}
	return r.decimal()
}

// fixedInt64 returns the integer x as an int64, false if out of range.
func fixedInt64(x fixed) (int64, bool) {
	v := x.c
	if x.s > 0 {
		v = new(big.Int).Quo(v, pow10(x.s))
	} else if x.s < 0 {
		if numDigits(v)-x.s > 19 {
			return 0, false
		}
		v = new(big.Int).Mul(v, pow10(-x.s))
	}
	if !v.IsInt64() {
		return 0, false
	}
	return v.Int64(), true
}

// powerSpecial is numeric_power for NaN and infinite arguments.
func powerSpecial(a, b Decimal) (Decimal, error) {
	one := FromInt64(1)
	if a.form == nan {
		if b.form == finite && b.Sign() == 0 {
			return one, nil
		}
		return NaN(), nil
	}
	if b.form == nan {
		if a.form == finite && a.Cmp(one) == 0 {
			return one, nil
		}
		return NaN(), nil
	}
	s1, s2 := a.Sign(), b.Sign()
	if s1 == 0 && s2 < 0 {
		return Decimal{}, errZeroNegativePower()
	}
	// numeric_is_integral counts the infinities as integers.
	if s1 < 0 && b.form == finite && !fixedOf(b).isInteger() {
		return Decimal{}, errComplexPower()
	}
	if a.form == finite && a.Cmp(one) == 0 {
		return one, nil
	}
	if s2 == 0 {
		return one, nil
	}
	if s1 == 0 && s2 > 0 {
		return Decimal{}, nil
	}
	if b.form != finite {
		// b is ±Infinity.
		gt1 := true
		if a.form == finite {
			if a.Cmp(FromInt64(-1)) == 0 {
				return one, nil
			}
			gt1 = a.Abs().Cmp(one) > 0
		}
		if gt1 == (s2 > 0) {
			return Inf(1), nil
		}
		return Decimal{}, nil
	}
	if a.form == pinf {
		if s2 > 0 {
			return Inf(1), nil
		}
		return Decimal{}, nil
	}
	// a is -Infinity and b finite and non-zero.
	if s2 < 0 {
		return Decimal{}, nil
	}
	if y := fixedOf(b); y.isInteger() && new(big.Int).Quo(y.c, pow10(max(y.s, 0))).Bit(0) == 1 {
		return Inf(-1), nil
	}
	return Inf(1), nil
}

// log10Abs returns log10|x| for x != 0 to about 15 significant digits.
func log10Abs(x fixed) float64 {
	c := new(big.Int).Abs(x.c)
	nd := numDigits(c)
	if nd > 17 {
		c.Quo(c, pow10(nd-17))
	}
	f, _ := new(big.Float).SetInt(c).Float64()
	return math.Log10(f) + float64(nd-numDigits(c)-x.s)
}

// powerInt is power_var_int(x, n, rscale): x^n for an integer n, rounded to
// rscale. The result is computed exactly and rounded when it has at most
// one digit beyond rscale (the only case where it can lie halfway between
// two results) and its size is moderate; otherwise in binary floating
// point with enough precision to round it correctly.
func powerInt(x fixed, n int64, rscale int) (fixed, error) {
	switch {
	case n == 0:
		return fixed{pow10(rscale), rscale}, nil
	case x.sign() == 0:
		// n > 0: numeric_power rejects 0^negative first.
		return fixedZero(rscale), nil
	case n == 1:
		return x.round(rscale), nil
	case n == -1:
		// 10^rscale / x, rounded.
		num, den := pow10(rscale+x.s), x.c
		if rscale+x.s < 0 {
			num, den = big.NewInt(1), new(big.Int).Mul(den, pow10(-rscale-x.s))
		}
		return fixed{roundDiv(num, den), rscale}, nil
	}
	// x^n is about 10^f.
	f := float64(n) * log10Abs(x)
	if f > maxExp10+1 {
		return fixed{}, overflowError()
	}
	if f < float64(-rscale)-2 {
		return fixedZero(rscale), nil
	}
	negative := x.sign() < 0 && n%2 != 0
	// Strip the trailing zeros of the coefficient: x = c·10^-s.
	c, s := new(big.Int).Abs(x.c), x.s
	if tz := trailingZeros(c); tz > 0 {
		c.Quo(c, pow10(tz))
		s -= tz
	}
	an := n
	if an < 0 {
		an = -an
	}
	var coef *big.Int
	switch {
	case n > 0 && int64(s)*an <= int64(rscale)+1:
		// Exact: c^n·10^(-s·n), at most one digit beyond rscale.
		p := new(big.Int).Exp(c, big.NewInt(an), nil)
		if sh := int64(rscale) - int64(s)*an; sh >= 0 {
			coef = p.Mul(p, pow10(int(sh)))
		} else {
			coef = roundDiv(p, pow10(int(-sh)))
		}
	case n < 0 && an*int64(numDigits(c)) <= 1<<16:
		// 1 / x^|n| with x^|n| exact, divided as power_var_int divides.
		p := fixed{new(big.Int).Exp(c, big.NewInt(an), nil), s * int(an)}
		coef = divFast(fixedOne, p, rscale).c
	default:
		// Digits from the leading one to rscale, and guard bits for the
		// 2·log2|n| roundings whose errors grow with the powers.
		lb := bitLen64(an)
		prec := int((max(f, 0)+float64(rscale)+4)*log2of10) + 64 + 2*lb
		for try := 0; ; try++ {
			v := powFloat(fixed{c, s}.bigFloat(uint(prec+lb+8)), an, uint(prec+lb+8))
			if n < 0 {
				v.Quo(bigFloatOne, v)
			}
			var ok bool
			coef, ok = roundFloat(v, rscale, v.MantExp(nil)-prec+4)
			if ok || try == 3 {
				break
			}
			prec += 64 << try
		}
	}
	if negative {
		coef.Neg(coef)
	}
	return fixed{coef, rscale}, nil
}

func bitLen64(v int64) int { return big.NewInt(v).BitLen() }

// trailingZeros returns the number of trailing decimal zeros of c > 0.
func trailingZeros(c *big.Int) int {
	n := 0
	q, r := new(big.Int), new(big.Int)
	ten := big.NewInt(10)
	t := new(big.Int).Set(c)
	for {
		q.QuoRem(t, ten, r)
		if r.Sign() != 0 || t.Sign() == 0 {
			return n
		}
		t, q = q, t
		n++
	}
}

// powFloat returns x^n (n > 0) by repeated squaring at precision prec.
func powFloat(x *big.Float, n int64, prec uint) *big.Float {
	r := new(big.Float).SetPrec(prec).SetInt64(1)
	b := new(big.Float).SetPrec(prec).Set(x)
	for {
		if n&1 != 0 {
			r.Mul(r, b)
		}
		n >>= 1
		if n == 0 {
			return r
		}
		b.Mul(b, b)
	}
}

// powerGeneral is power_var for a positive base x and an exponent y that
// is not an integer in the int32 range: exp(y·ln(x)) with power_var's
// scales. ds1 and ds2 are the display scales of the arguments.
func powerGeneral(x, y fixed, ds1, ds2 int) (fixed, error) {
	lndw := estimateLnDweight(x)
	// A first estimate of y·ln(x) with ln(x) to about 8 digits.
	lr := max(8-lndw, 0)
	lnx, err := lnVar(x, lr)
	if err != nil {
		return fixed{}, err
	}
	val := lnx.mul(y).round(lr).float64()
	if math.Abs(val) > maxResultScale*3.01 {
		if val > 0 {
			return fixed{}, overflowError()
		}
		return fixedZero(MaxDivScale), nil
	}
	val *= 0.434294481903252
	rscale := clampScale(max(MinSigDigits-int(val), ds1, ds2))
	sig := max(rscale+int(val), 0)
	lr = max(sig-lndw+8, 0)
	if lnx, err = lnVar(x, lr); err != nil {
		return fixed{}, err
	}
	return expVar(lnx.mul(y).round(lr), rscale)
}
