package ope

import "math"

// Hypergeometric sampling.
//
// Every inner node of the OPE tree has a range of N = 2^j ciphertexts and a
// domain of K plaintexts. The node sends the plaintexts that land in the
// lower half of its range (n = N/2 of the N ciphertexts) to its left child.
// For a random order-preserving function their number X follows the
// hypergeometric distribution: the number of "successes" among n draws
// without replacement from a population of N containing K successes,
//
//	P(X = k) = C(K, k) C(N-K, n-k) / C(N, n).
//
// sampleHalf draws X from the node's coins. Its output is always in the
// support, max(0, K-n) <= X <= min(K, n), whatever the floating-point
// rounding: so the tree always stays a strictly increasing function and
// decryption, which replays the same coins, always inverts it. Rounding
// only moves the distribution of X slightly away from the exact one; see
// the precision notes on hrua and inversion.

// D1 = 2 sqrt(2/e) and D2 = 3 - 2 sqrt(3/e): the constants of the
// ratio-of-uniforms hat for the hypergeometric distribution (Stadlober).
const (
	hruaD1 = 1.7155277699214135
	hruaD2 = 0.8989161620588988
)

// inversionMax is the largest K sampled by inversion (K/2 expected steps);
// larger K use the ratio-of-uniforms method.
const inversionMax = 24

// sampleHalf returns X ~ HG(N = 2^j, K, n = N/2), for j >= 1 and 1 <= K <= N.
func sampleHalf(j uint, K u128, c *nodeCoins) u128 {
	n := pow2(j - 1)
	if n.less(K) {
		// More successes than failures: count the failures among the n
		// draws instead, X = n - X'.
		k2 := pow2(j).sub(K) // N - K < n (mod 2^128, so exact even for N = 2^128)
		if k2.isZero() {
			return n
		}
		return n.sub(sampleHalfSmall(j, k2, c))
	}
	return sampleHalfSmall(j, K, c)
}

// sampleHalfSmall is sampleHalf for 1 <= K <= n = N/2.
func sampleHalfSmall(j uint, K u128, c *nodeCoins) u128 {
	if K.hi == 0 && K.lo <= inversionMax {
		return u64(inversion(j, K.lo, c))
	}
	return hrua(j, K, c)
}

// inversion samples X by sequential search from 0 over the cumulative
// distribution, for small K (K <= n). The probabilities are computed with
// the recurrence P(k+1)/P(k) = (K-k)(n-k) / ((k+1)(n-K+k+1)) in float64, so
// each is exact to a few ulp (relative error below 1e-14 for K <= 24).
func inversion(j uint, K uint64, c *nodeCoins) uint64 {
	n := pow2(j - 1)
	// P(0) = prod_{i<K} (n-i)/(N-i) = C(N-K, n)/C(N, n).
	p := 1.0
	for i := uint64(0); i < K; i++ {
		p = mul(p, n.sub64(i).float()/pow2MinusFloat(j, i))
	}
	u := float64(c.next()>>11) * 0x1p-53 // [0, 1)
	nk := n.sub64(K)                     // n - K >= 0
	for k := uint64(0); k < K; k++ {
		if u < p {
			return k
		}
		u -= p
		num := mul(float64(K-k), n.sub64(k).float())
		den := mul(float64(k+1), nk.add64(k+1).float())
		p = mul(p, num/den)
	}
	return K
}

// hrua samples X by Stadlober's ratio-of-uniforms method with the
// hypergeometric hat of constants D1, D2 and the squeezes of his "HRUA"
// algorithm, for K > inversionMax and K <= n = N/2 (so the mode is
// m = floor((K+1)/2) exactly, because n+1 / N+2 = 1/2).
//
// Precision: the mode and every candidate are handled as exact integers
// (only the small deviation d = X - m is produced in floating point), and
// the acceptance ratio T = log P(m+d)/P(m) is computed as a sum of terms
// that each keep their full relative precision: the large d*log(a) parts of
// the four log-factorial differences are combined analytically into
// d*log1p(delta) with delta = N(m - K/2)/((K-m)(n-m)), and each remainder
// a*phi(d/a) + log1p(d/a)/2 + R(a+d) - R(a) is evaluated with series near
// zero. The absolute error of T is below about 1e-12 over the bulk of the
// distribution (|d| up to 16 standard deviations, all a >= 256), so the
// probability of each outcome is exact to a relative 1e-12; in the far
// tails, where one of the factorial arguments is below 256, log-factorials
// are differenced directly, which is less precise but only affects outcomes
// of probability below e^-8 relative to the mode.
func hrua(j uint, K u128, c *nodeCoins) u128 {
	n := pow2(j - 1)
	m := K.add64(1).shr(1) // mode
	a1 := m                // m
	a2 := K.sub(m)         // K - m
	a3 := n.sub(m)         // n - m
	a4 := n.sub(K).add(m)  // N - K - n + m

	Kf, Nf := K.float(), math.Ldexp(1, int(j))
	a1f, a2f, a3f, a4f := a1.float(), a2.float(), a3.float(), a4.float()

	frac := 0.0 // mean + 1/2 - mode
	if K.lo&1 == 0 {
		frac = 0.5
	}
	// Variance of X: K (N-K) n (N-n) / (N^2 (N-1)) = K (N-K) / (4 (N-1)).
	variance := mul(Kf, Nf-Kf) / mul(4, Nf-1)
	cc := math.Sqrt(variance + 0.5)
	h := mul(hruaD1, cc) + hruaD2
	// Candidates X = m + d must satisfy X < b = min(K+1, floor(mean+1/2+16c)),
	// that is d < dMax.
	dMax := math.Floor(frac + mul(16, cc))
	if km := K.add64(1).sub(m); km.hi == 0 && km.lo < 1<<53 && float64(km.lo) < dMax {
		dMax = float64(km.lo)
	}
	// log(a1 a4 / (a2 a3)) = log1p(N (m - K/2) / (a2 a3)).
	logRatio := 0.0
	if K.lo&1 == 1 {
		logRatio = dlog1p(Nf / 2 / mul(a2f, a3f))
	}

	for {
		w := c.next()
		U := float64(w>>11+1) * 0x1p-53      // (0, 1]
		V := float64(c.next()>>11) * 0x1p-53 // [0, 1)
		dX := frac + mul(h, V-0.5)/U
		if !(dX >= -0x1p63) || dX >= dMax {
			continue
		}
		df := math.Floor(dX)
		d := int64(df)
		// X = m + d must be >= 0.
		if d < 0 && m.less(u64(uint64(-(d+1))+1)) {
			continue
		}
		// T = log P(m+d) - log P(m) = -d*logRatio - sum of the remainders.
		T := -mul(df, logRatio) -
			(lfRem(a1f, df) + lfRem(a2f, -df) + (lfRem(a3f, -df) + lfRem(a4f, df)))
		if mul(U, 4-U)-3 <= T {
			return addSigned(m, d) // fast acceptance
		}
		if mul(U, U-T) >= 1 {
			continue // fast rejection
		}
		if mul(2, dlog(U)) <= T {
			return addSigned(m, d)
		}
	}
}

// pow2MinusFloat returns 2^j - i rounded to float64, for j <= 128 (2^128 does
// not fit a u128, but 2^128 - i does for i >= 1).
func pow2MinusFloat(j uint, i uint64) float64 {
	if j < 128 {
		return pow2(j).sub64(i).float()
	}
	if i == 0 {
		return 0x1p128
	}
	return u128{math.MaxUint64, math.MaxUint64}.sub64(i - 1).float()
}

func addSigned(m u128, d int64) u128 {
	if d >= 0 {
		return m.add64(uint64(d))
	}
	return m.sub64(uint64(-(d + 1)) + 1)
}

// lfRem returns log((a+e)!) - log(a!) - e*log(a), for integer-valued a >= 1
// and a+e >= 0.
func lfRem(a, e float64) float64 {
	if e == 0 {
		return 0
	}
	x := a + e
	if a >= lfTableSize && x >= lfTableSize {
		// Stirling: log(x!) = x log x - x + log(2 pi x)/2 + R(x), so with
		// t = e/a the difference minus e log a is
		// a phi(t) + log1p(t)/2 + R(a+e) - R(a).
		t := e / a
		return mul(a, phi(t)) + (mul(0.5, dlog1p(t)) + (stirlingR(x) - stirlingR(a)))
	}
	return (logFactorial(x) - logFactorial(a)) - mul(e, dlog(a))
}
