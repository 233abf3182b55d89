package ope

import "math"

// Deterministic floating-point helpers.
//
// OPE encryption is deterministic: every proxy, on every architecture, must
// map a plaintext to the same ciphertext, or ciphertexts written by two
// proxies would not compare correctly on the server. The hypergeometric
// sampler therefore uses only IEEE 754 operations whose results are fixed by
// the standard (+, -, *, /, sqrt, floor, integer conversions) and the
// logarithms below, written with those operations. It avoids math.Log,
// which has architecture-specific assembly, and prevents the compiler from
// fusing a multiply and an add into one FMA instruction (which Go allows,
// and does on arm64, ppc64 and s390x) by rounding every product explicitly
// with float64(...) before it is added.

const (
	ln2Hi = 6.93147180369123816490e-01 // high 32 bits of ln 2: e*ln2Hi is exact for |e| < 2^20
	ln2Lo = 1.90821492927058770002e-10 // ln 2 - ln2Hi
)

// mul returns a*b rounded to float64, never fused with a later addition.
func mul(a, b float64) float64 { return float64(a * b) }

// atanhSeries returns 2*atanh(s) = log((1+s)/(1-s)) for |s| <= 0.1716, to
// about 1 ulp, with a fixed number of terms chosen from |s|.
func atanhSeries(s float64) float64 {
	z := mul(s, s)
	var p float64
	switch a := math.Abs(s); {
	case a < 0x1p-27:
		return mul(2, s)
	case a < 0x1p-13:
		// s + s^3/3 + s^5/5 + s^7/7 (next term < 2^-91 relative)
		p = 1.0 / 7
		p = 1.0/5 + mul(p, z)
		p = 1.0/3 + mul(p, z)
	case a < 0x1p-5:
		p = 1.0 / 17
		p = 1.0/15 + mul(p, z)
		p = 1.0/13 + mul(p, z)
		p = 1.0/11 + mul(p, z)
		p = 1.0/9 + mul(p, z)
		p = 1.0/7 + mul(p, z)
		p = 1.0/5 + mul(p, z)
		p = 1.0/3 + mul(p, z)
	default: // |s| <= 0.1716, z <= 0.02944: 12 more terms reach 2^-60
		p = 1.0 / 27
		p = 1.0/25 + mul(p, z)
		p = 1.0/23 + mul(p, z)
		p = 1.0/21 + mul(p, z)
		p = 1.0/19 + mul(p, z)
		p = 1.0/17 + mul(p, z)
		p = 1.0/15 + mul(p, z)
		p = 1.0/13 + mul(p, z)
		p = 1.0/11 + mul(p, z)
		p = 1.0/9 + mul(p, z)
		p = 1.0/7 + mul(p, z)
		p = 1.0/5 + mul(p, z)
		p = 1.0/3 + mul(p, z)
	}
	// 2s + 2s*z*p
	return mul(2, s) + mul(mul(2, s), mul(z, p))
}

// dlog returns the natural logarithm of x > 0 (x finite, normal), to
// within about 2 ulp, deterministically.
func dlog(x float64) float64 {
	b := math.Float64bits(x)
	e := int((b>>52)&0x7ff) - 1023
	f := math.Float64frombits(b&^(0x7ff<<52) | 1023<<52) // in [1, 2)
	if f > math.Sqrt2 {
		f /= 2 // exact
		e++
	}
	s := (f - 1) / (f + 1) // f-1 is exact; f+1 rounds at most once
	r := atanhSeries(s)
	fe := float64(e)
	return mul(fe, ln2Hi) + (mul(fe, ln2Lo) + r)
}

// dlog1p returns log(1+t) for t > -1, deterministically, accurate to a few
// ulp relative to the result even for tiny t.
func dlog1p(t float64) float64 {
	if math.Abs(t) < 0.25 {
		// 1+s / 1-s = 1+t with s = t/(2+t); |s| < 1/7.
		return atanhSeries(t / (2 + t))
	}
	u := 1 + t
	// Correct the rounding of 1+t: log(1+t) ~ log(u) + (t-(u-1))/u.
	return dlog(u) + (t-(u-1))/u
}

// phi returns (1+t)*log(1+t) - t for t >= -1, accurately for small |t|
// (where it is about t^2/2).
func phi(t float64) float64 {
	a := math.Abs(t)
	if a >= 0x1p-4 {
		if t == -1 {
			return 1
		}
		return mul(1+t, dlog1p(t)) - t
	}
	// Sum_{k>=2} (-1)^k t^k / (k(k-1)) = t^2 * (1/2 - t/6 + t^2/12 - t^3/20 + ...)
	var p float64
	switch {
	case a < 0x1p-26:
		p = 1.0/2 - mul(t, 1.0/6)
	case a < 0x1p-13:
		// 1/2 - t/6 + t^2/12 - t^3/20 + t^4/30 (next term < 2^-63 relative)
		p = 1.0 / 30
		p = -1.0/20 + mul(t, p)
		p = 1.0/12 + mul(t, p)
		p = -1.0/6 + mul(t, p)
		p = 1.0/2 + mul(t, p)
	default:
		// coefficients c_k = (-1)^k / (k(k-1)) for k = 2..16, Horner in t.
		p = 1.0 / (16 * 15)
		p = -1.0/(15*14) + mul(t, p)
		p = 1.0/(14*13) + mul(t, p)
		p = -1.0/(13*12) + mul(t, p)
		p = 1.0/(12*11) + mul(t, p)
		p = -1.0/(11*10) + mul(t, p)
		p = 1.0/(10*9) + mul(t, p)
		p = -1.0/(9*8) + mul(t, p)
		p = 1.0/(8*7) + mul(t, p)
		p = -1.0/(7*6) + mul(t, p)
		p = 1.0/(6*5) + mul(t, p)
		p = -1.0/(5*4) + mul(t, p)
		p = 1.0/(4*3) + mul(t, p)
		p = -1.0/(3*2) + mul(t, p)
		p = 1.0/2 + mul(t, p)
	}
	return mul(mul(t, t), p)
}

// lfTable[i] = log(i!) for i < lfTableSize, summed with dlog.
const lfTableSize = 256

var lfTable = func() (tab [lfTableSize]float64) {
	for i := 2; i < lfTableSize; i++ {
		tab[i] = tab[i-1] + dlog(float64(i))
	}
	return tab
}()

// stirlingR returns the remainder of Stirling's series for log(x!),
// 1/(12x) - 1/(360x^3) + 1/(1260x^5) - 1/(1680x^7), for x >= 16 (error below
// 1/(1188 x^9) < 2^-45 / x).
func stirlingR(x float64) float64 {
	r := 1 / x
	r2 := mul(r, r)
	p := -1.0 / 1680
	p = 1.0/1260 + mul(r2, p)
	p = -1.0/360 + mul(r2, p)
	p = 1.0/12 + mul(r2, p)
	return mul(r, p)
}

const halfLog2Pi = 0.91893853320467274178 // log(2*pi)/2

// logFactorial returns log(x!) for an integer-valued x >= 0.
func logFactorial(x float64) float64 {
	if x < lfTableSize {
		if x < 0 { // only from rounding of huge arguments, far in a tail
			x = 0
		}
		return lfTable[int(x)]
	}
	// x log x - x + log(2 pi x)/2 + R(x)
	lx := dlog(x)
	return (mul(x, lx) - x) + (mul(0.5, lx) + halfLog2Pi) + stirlingR(x)
}
