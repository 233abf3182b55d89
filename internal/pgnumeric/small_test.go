package pgnumeric

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// forceBig returns d with its coefficient held as a big.Int, so the
// operations take their general paths (the fast int64 paths must give the
// same results).
func forceBig(d Decimal) Decimal {
	if d.form == finite && d.coef == nil {
		d.coef = big.NewInt(d.small)
	}
	return d
}

func TestSmallPathsMatchGeneralPaths(t *testing.T) {
	edges := []int64{0, 1, -1, 9, 10, 99, math.MaxInt64, math.MinInt64, math.MaxInt64 / 10, math.MinInt64 / 10,
		1 << 62, -(1 << 62), 3037000499, 3037000500, -3037000500, 999999999999999999, -999999999999999999}
	r := rand.New(rand.NewPCG(1, 2))
	value := func() Decimal {
		var c int64
		switch r.IntN(3) {
		case 0:
			c = edges[r.IntN(len(edges))]
		case 1:
			c = r.Int64N(2000001) - 1000000
		default:
			c = int64(r.Uint64())
		}
		return Decimal{small: c, dscale: int32(r.IntN(22))}
	}
	for range 20000 {
		a, b := value(), value()
		ab, bb := forceBig(a), forceBig(b)
		for _, op := range []struct {
			name string
			f    func(x, y Decimal) (Decimal, error)
		}{{"+", Decimal.Add}, {"-", Decimal.Sub}, {"*", Decimal.Mul}} {
			got, err1 := op.f(a, b)
			want, err2 := op.f(ab, bb)
			if (err1 == nil) != (err2 == nil) || got.String() != want.String() {
				t.Fatalf("%s %s %s = %s (%v), want %s (%v)", a, op.name, b, got, err1, want, err2)
			}
			if got.coef != nil && got.coef.IsInt64() {
				t.Fatalf("%s %s %s: a big coefficient that fits in an int64", a, op.name, b)
			}
		}
		if got, want := a.Cmp(b), ab.Cmp(bb); got != want {
			t.Fatalf("Cmp(%s, %s) = %d, want %d", a, b, got, want)
		}
		if got, want := a.Neg().String(), forceBig(a).Neg().String(); got != want {
			t.Fatalf("-(%s) = %s, want %s", a, got, want)
		}
		if got, want := a.Sign(), ab.Sign(); got != want {
			t.Fatalf("Sign(%s) = %d, want %d", a, got, want)
		}
	}
}

func TestSumSpillsExactly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		var s Sum
		want := new(big.Rat)
		n := 1 + r.IntN(50)
		for range n {
			d := Decimal{small: int64(r.Uint64()) >> r.IntN(64), dscale: int32(r.IntN(8))}
			s.Add(d)
			x, _ := new(big.Rat).SetString(d.String())
			want.Add(want, x)
		}
		got, ok, err := s.Result()
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		g, _ := new(big.Rat).SetString(got.String())
		if g.Cmp(want) != 0 {
			t.Fatalf("sum = %s, want %s", got, want.FloatString(10))
		}
	}
}

func TestFromCoefficient(t *testing.T) {
	for _, c := range []struct {
		neg    bool
		digits string
		scale  int
		want   string
	}{
		{false, "", 0, "0"}, {false, "", 2, "0.00"}, {true, "150", 2, "-1.50"}, {false, "007", 1, "0.7"},
		{false, "123456789012345678", 3, "123456789012345.678"},
		{true, "1234567890123456789012", 4, "-123456789012345678.9012"},
		{false, "9223372036854775808", 0, "9223372036854775808"},
	} {
		d, err := FromCoefficient(c.neg, c.digits, c.scale)
		if err != nil || d.String() != c.want {
			t.Errorf("FromCoefficient(%v, %q, %d) = %s, %v; want %s", c.neg, c.digits, c.scale, d, err, c.want)
		}
		if p := MustParse(c.want); p.Cmp(d) != 0 || p.Scale() != d.Scale() {
			t.Errorf("FromCoefficient(%v, %q, %d) differs from Parse(%q)", c.neg, c.digits, c.scale, c.want)
		}
	}
	if _, err := FromCoefficient(false, "1x", 0); err == nil {
		t.Error("FromCoefficient accepted a non-digit")
	}
	if _, err := FromCoefficient(false, "1", MaxScale+1); err == nil {
		t.Error("FromCoefficient accepted a scale above MaxScale")
	}
}

func TestSumMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 200 {
		var all, x, y Sum
		for range r.IntN(40) {
			d := Decimal{small: int64(r.Uint64()) >> r.IntN(64), dscale: int32(r.IntN(6))}
			if r.IntN(50) == 0 {
				d = NaN()
			}
			all.Add(d)
			if r.IntN(2) == 0 {
				x.Add(d)
			} else {
				y.Add(d)
			}
		}
		x.Merge(&y)
		want, wok, werr := all.Result()
		got, gok, gerr := x.Result()
		if gok != wok || (gerr == nil) != (werr == nil) || got.String() != want.String() || x.Count() != all.Count() {
			t.Fatalf("merged sum %s (%v, %v, n=%d), want %s (%v, %v, n=%d)", got, gok, gerr, x.Count(), want, wok, werr, all.Count())
		}
	}
}
