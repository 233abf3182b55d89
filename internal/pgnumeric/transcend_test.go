package pgnumeric

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestTruncLog10(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want int
	}{
		{1000, 3},
		{math.Nextafter(1000, 0), 3}, // log10 rounds to 3
		{999.9999999999, 2},
		{999.9, 2},
		{1e22, 22},
		{0.1, -1},
		{math.Nextafter(0.1, 1), 0}, // -0.9999999999999999
		{1e-300, -300},
		{math.Nextafter(1e-300, 1), -300},
		{0.1000000001, 0},
		{0.0999, -1},
		{0.5, 0},
		{1, 0},
		{1e-5, -5},
		{12345, 4},
		{301799.8, 5},
	} {
		if got := truncLog10(c.v); got != c.want {
			t.Errorf("truncLog10(%v) = %d, want %d", c.v, got, c.want)
		}
	}
}

func TestEstimateLnDweight(t *testing.T) {
	for _, c := range []struct {
		x    string
		want int
	}{
		{"1", 0},
		{"1.0001", -4},
		{"0.9999", -4},
		{"0.9", -1},
		{"1.1", -1},
		{"2", 0},         // ln 2 = 0.69: (int) log10 truncates toward 0
		{"10", 0},        // 2.30
		{"1e100", 2},     // 230.3
		{"1e-100", 2},    // -230.3
		{"15000", 0},     // 9.6
		{"1.5", 0},       // 0.405
		{"0.5", 0},       // -0.69
		{"0.95", -2},     // near 1: x-1 = -0.05
		{"123456789", 1}, // ln from 12345e4: 18.6
		{"0", 0},
		{"-5", 0},
	} {
		if got := estimateLnDweight(fixedOf(MustParse(c.x))); got != c.want {
			t.Errorf("estimateLnDweight(%s) = %d, want %d", c.x, got, c.want)
		}
	}
}

// TestSqrtFloor checks the binary shortcut of sqrtFloor against the exact
// integer square root.
func TestSqrtFloor(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		c, _ := new(big.Int).SetString("1"+randomDigits(r, r.IntN(300), r.IntN(4)), 10)
		x := fixed{c, r.IntN(400) - 100}
		k := r.IntN(200) - 50
		n := new(big.Int)
		if e := 2*k - x.s; e >= 0 {
			n.Mul(x.c, pow10(e))
		} else {
			n.Quo(x.c, pow10(-e))
		}
		want := n.Sqrt(n)
		if got := sqrtFloor(x, k); got.Cmp(want) != 0 {
			t.Fatalf("sqrtFloor(%s e-%d, %d) = %s, want %s", x.c, x.s, k, got, want)
		}
	}
}

func TestNbaseDigits(t *testing.T) {
	for _, c := range []struct {
		x      string
		digits []int32
		weight int
	}{
		{"1.5", []int32{1, 5000}, 0},
		{"10000", []int32{1}, 1},
		{"123456789", []int32{1, 2345, 6789}, 2},
		{"0.00012", []int32{1, 2000}, -1},
		{"0.0000012", []int32{120}, -2},
	} {
		d, w := nbaseDigits(fixedOf(MustParse(c.x)))
		if w != c.weight || len(d) != len(c.digits) {
			t.Errorf("nbaseDigits(%s) = %v, %d; want %v, %d", c.x, d, w, c.digits, c.weight)
			continue
		}
		for i := range d {
			if d[i] != c.digits[i] {
				t.Errorf("nbaseDigits(%s) = %v, %d; want %v, %d", c.x, d, w, c.digits, c.weight)
				break
			}
		}
		if back := fromNBase(d, w, false); back.cmp(fixedOf(MustParse(c.x))) != 0 {
			t.Errorf("fromNBase(nbaseDigits(%s)) = %s e-%d", c.x, back.c, back.s)
		}
	}
}

// TestTranscendentalBounded checks that huge arguments, the largest
// scales and the largest results are computed in bounded time (the
// differential table checks their values).
func TestTranscendentalBounded(t *testing.T) {
	near1 := "1." + strings.Repeat("0", 16382) + "1"
	huge := "9" + strings.Repeat("9", 131071)
	long := "1." + strings.Repeat("3", 16383)
	for _, c := range []numCase{
		{op: "log", a: near1, b: huge},
		{op: "log", a: huge, b: near1},
		{op: "ln", a: huge},
		{op: "ln", a: "0." + strings.Repeat("0", 16382) + "1"},
		{op: "log", a: long, b: "2." + strings.Repeat("7", 16383)},
		{op: "exp", a: "5999." + strings.Repeat("9", 16383)},
		{op: "exp", a: "5999.99"},
		{op: "power", a: "1.5", b: "700000"},
		{op: "power", a: "0.123456789", b: "-100000"},
		{op: "power", a: near1, b: "1e16383"},
		{op: "power", a: long, b: "2." + strings.Repeat("7", 16383)},
		{op: "power", a: "1.0000001", b: "2147483647"},
		{op: "power", a: "0.5", b: "-6000.5"},
	} {
		start := time.Now()
		got := local(c.op, c.a, c.b)
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s %.20q %.20q took %v", c.op, c.a, c.b, el)
		}
		if strings.HasPrefix(got, "bad") {
			t.Errorf("%s %.20q %.20q: %s", c.op, c.a, c.b, got)
		}
	}
}
