package ope

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func testCoins(t testing.TB) *nodeCoins {
	t.Helper()
	tr, err := newTree(make([]byte, KeySize), 64, 128, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &nodeCoins{t: tr}
}

// hgPMF returns P(X = k) of HG(N = 2^j, K, N/2): exactly (big rationals)
// for N <= 1024, with math.Lgamma (relative error ~1e-10) above.
func hgPMF(j uint, K uint64) []float64 {
	N := uint64(1) << j
	n := N / 2
	if j > 10 {
		lg := func(x uint64) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
		lc := func(a, b uint64) float64 { return lg(a) - lg(b) - lg(a-b) }
		pmf := make([]float64, K+1)
		for k := uint64(0); k <= K && k <= n; k++ {
			if n-k <= N-K {
				pmf[k] = math.Exp(lc(K, k) + lc(N-K, n-k) - lc(N, n))
			}
		}
		return pmf
	}
	binom := func(a, b uint64) *big.Int { return new(big.Int).Binomial(int64(a), int64(b)) }
	total := binom(N, n)
	pmf := make([]float64, K+1)
	for k := uint64(0); k <= K && k <= n; k++ {
		if n-k > N-K {
			continue
		}
		num := new(big.Int).Mul(binom(K, k), binom(N-K, n-k))
		f, _ := new(big.Rat).SetFrac(num, total).Float64()
		pmf[k] = f
	}
	return pmf
}

// binomialHalfPMF returns Binomial(K, 1/2), the limit of HG(N, K, N/2) for
// N >> K^2 (used for N = 2^64 and 2^128).
func binomialHalfPMF(K uint64) []float64 {
	pmf := make([]float64, K+1)
	for k := uint64(0); k <= K; k++ {
		lg := func(x uint64) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
		pmf[k] = math.Exp(lg(K) - lg(k) - lg(K-k) - float64(K)*math.Ln2)
	}
	return pmf
}

// chiSquare tests samples against pmf, merging bins with expected counts
// below 5 into their neighbours, and fails on p < ~1e-6.
func chiSquare(t *testing.T, counts map[uint64]int, pmf []float64, total int) {
	t.Helper()
	var stat float64
	dof := -1
	var accE float64
	var accO int
	for k, p := range pmf {
		accE += p * float64(total)
		accO += counts[uint64(k)]
		if accE >= 5 {
			stat += (float64(accO) - accE) * (float64(accO) - accE) / accE
			dof++
			accE, accO = 0, 0
		}
	}
	for k, c := range counts {
		if k >= uint64(len(pmf)) || pmf[k] == 0 {
			t.Fatalf("sample %d outside the support (count %d)", k, c)
		}
	}
	if accE > 0 {
		stat += (float64(accO) - accE) * (float64(accO) - accE) / math.Max(accE, 1e-300)
		dof++
	}
	limit := float64(dof) + 7*math.Sqrt(2*float64(dof)) + 12
	if stat > limit {
		t.Errorf("chi-square %.1f with %d degrees of freedom (limit %.1f)", stat, dof, limit)
	}
}

func TestSampleHalfDistribution(t *testing.T) {
	const samples = 20000
	tests := []struct {
		j   uint
		K   uint64
		pmf func() []float64
	}{
		{8, 1, nil}, {8, 5, nil}, {8, 24, nil}, {8, 25, nil}, {8, 60, nil},
		{8, 128, nil}, {8, 200, nil}, {8, 255, nil}, {8, 256, nil},
		{12, 1000, nil}, {12, 4000, nil}, {16, 3001, nil},
		{64, 24, func() []float64 { return binomialHalfPMF(24) }},
		{64, 25, func() []float64 { return binomialHalfPMF(25) }},
		{64, 1001, func() []float64 { return binomialHalfPMF(1001) }},
		{128, 700, func() []float64 { return binomialHalfPMF(700) }},
	}
	c := testCoins(t)
	for _, tt := range tests {
		t.Run(fmt.Sprintf("N=2^%d/K=%d", tt.j, tt.K), func(t *testing.T) {
			var pmf []float64
			if tt.pmf != nil {
				pmf = tt.pmf()
			} else {
				pmf = hgPMF(tt.j, tt.K)
			}
			counts := map[uint64]int{}
			for i := 0; i < samples; i++ {
				c.reset(kindSplit, 7, u64(uint64(i)))
				x := sampleHalf(tt.j, u64(tt.K), c)
				if x.hi != 0 || x.lo > tt.K {
					t.Fatalf("sample %v > K", x)
				}
				counts[x.lo]++
			}
			chiSquare(t, counts, pmf, samples)
		})
	}
}

// TestSampleHalfLarge checks mean, variance and low-order bits of samples
// with huge parameters (the OPE roots), where floating point could quantize.
func TestSampleHalfLarge(t *testing.T) {
	const samples = 20000
	tests := []struct {
		j uint
		K u128
	}{
		{64, pow2(32)},   // root of Cipher32
		{128, pow2(64)},  // root of Cipher64
		{128, pow2(100)}, // K >> 2^53
		{64, pow2(63)},   // K = n
		{64, pow2(62).add64(12345)},
		{40, u64(1<<39 - 3)},
	}
	c := testCoins(t)
	for _, tt := range tests {
		t.Run(fmt.Sprintf("N=2^%d/K=%v", tt.j, tt.K.float()), func(t *testing.T) {
			N := math.Ldexp(1, int(tt.j))
			K := tt.K.float()
			mean := K / 2
			variance := K * (N - K) / (4 * (N - 1))
			var sum, sumSq float64
			var low [16]int
			for i := 0; i < samples; i++ {
				c.reset(kindSplit, 3, u64(uint64(i)))
				x := sampleHalf(tt.j, tt.K, c)
				if tt.K.less(x) {
					t.Fatalf("sample > K")
				}
				d := x.float() - mean
				if x.hi == 0 && tt.K.hi == 0 {
					d = float64(int64(x.lo - tt.K.lo/2)) // exact for large values
				}
				sum += d
				sumSq += d * d
				low[x.lo%16]++
			}
			m := sum / samples
			v := sumSq/samples - m*m
			if z := m / math.Sqrt(variance/samples); math.Abs(z) > 5 {
				t.Errorf("mean off by %.1f standard errors", z)
			}
			if r := v / variance; r < 0.93 || r > 1.07 {
				t.Errorf("variance ratio %.3f", r)
			}
			pmf := make([]float64, 16)
			for i := range pmf {
				pmf[i] = 1.0 / 16
			}
			counts := map[uint64]int{}
			for i, n := range low {
				counts[uint64(i)] = n
			}
			chiSquare(t, counts, pmf, samples)
		})
	}
}

func TestSampleHalfSupportEdges(t *testing.T) {
	c := testCoins(t)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		j := uint(1 + r.IntN(128))
		N := pow2MinusFloat(j, 0)
		var K u128
		switch i % 3 {
		case 0:
			K = u64(1 + r.Uint64N(64))
		case 1: // near N
			if j == 128 {
				K = u128{math.MaxUint64, math.MaxUint64}.sub64(r.Uint64N(64))
			} else {
				K = pow2(j).sub64(r.Uint64N(64))
			}
		default:
			K = u128{r.Uint64(), r.Uint64()}.lowBits(j)
		}
		if K.isZero() || (j < 128 && pow2(j).less(K)) {
			continue
		}
		_ = N
		c.reset(kindSplit, 1, u64(uint64(i)))
		x := sampleHalf(j, K, c)
		n := pow2(j - 1)
		// max(0, K-n) <= x <= min(K, n)
		if K.less(x) || n.less(x) {
			t.Fatalf("j=%d K=%v: x=%v above the support", j, K, x)
		}
		if n.less(K) && x.less(K.sub(n)) {
			t.Fatalf("j=%d K=%v: x=%v below the support", j, K, x)
		}
	}
}

func TestDetMath(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ulps := func(a, b float64) float64 {
		return math.Abs(a-b) / math.Abs(math.Nextafter(b, math.Inf(1))-b)
	}
	for i := 0; i < 100000; i++ {
		x := math.Exp(r.Float64()*1400 - 700)
		if u := ulps(dlog(x), math.Log(x)); u > 2 && math.Abs(math.Log(x)) > 1e-300 {
			t.Fatalf("dlog(%g) = %g, want %g (%.1f ulp)", x, dlog(x), math.Log(x), u)
		}
		tt := math.Exp(r.Float64()*80-78) * float64(1-2*r.IntN(2))
		if tt <= -1 {
			continue
		}
		if u := ulps(dlog1p(tt), math.Log1p(tt)); u > 4 {
			t.Fatalf("dlog1p(%g) = %g, want %g (%.1f ulp)", tt, dlog1p(tt), math.Log1p(tt), u)
		}
	}
	// phi against a high-precision reference.
	for _, tt := range []float64{-0.999, -0.5, -0.07, -0.06, -1e-3, -3e-5, -1e-9, 1e-12, 1e-9, 2e-8, 1e-4, 0.01, 0.06, 0.07, 0.5, 3, 1e3} {
		want := phiRef(tt)
		if got := phi(tt); math.Abs(got-want) > 1e-14*math.Abs(want) {
			t.Errorf("phi(%g) = %g, want %g", tt, got, want)
		}
	}
	for _, x := range []float64{0, 1, 2, 10, 255, 256, 257, 1000, 1e6, 1e12, 1e18} {
		want, _ := math.Lgamma(x + 1)
		if got := logFactorial(x); math.Abs(got-want) > 1e-13*math.Max(1, math.Abs(want)) {
			t.Errorf("logFactorial(%g) = %g, want %g", x, got, want)
		}
	}
}

// phiRef computes (1+t)log(1+t) - t with 200-bit floats and a series for log.
func phiRef(t float64) float64 {
	const prec = 200
	tb := new(big.Float).SetPrec(prec).SetFloat64(t)
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	u := new(big.Float).SetPrec(prec).Add(one, tb)
	// log(u) = 2 atanh((u-1)/(u+1)), reduce u by sqrt until close to 1.
	k := 0
	for u.Cmp(new(big.Float).SetFloat64(1.01)) > 0 || u.Cmp(new(big.Float).SetFloat64(0.99)) < 0 {
		u.Sqrt(u)
		k++
	}
	s := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).Sub(u, one), new(big.Float).SetPrec(prec).Add(u, one))
	s2 := new(big.Float).SetPrec(prec).Mul(s, s)
	term := new(big.Float).SetPrec(prec).Set(s)
	sum := new(big.Float).SetPrec(prec)
	for i := 1; i < 200; i += 2 {
		sum.Add(sum, new(big.Float).SetPrec(prec).Quo(term, new(big.Float).SetInt64(int64(i))))
		term.Mul(term, s2)
	}
	sum.Mul(sum, new(big.Float).SetInt64(int64(2)<<k))
	res := new(big.Float).SetPrec(prec).Mul(new(big.Float).SetPrec(prec).Add(one, tb), sum)
	res.Sub(res, tb)
	f, _ := res.Float64()
	return f
}
