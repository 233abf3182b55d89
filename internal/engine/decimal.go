package engine

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/rewrite"
)

// decimal is an exact numeric value for the proxy's own arithmetic
// (split execution): v / 10^scale, or NaN, with PostgreSQL's display
// scale rules (numeric.c: add/sub keep the larger scale, mul adds them,
// div chooses select_div_scale). Infinities are not supported.
type decimal struct {
	v     *big.Int
	scale int
	nan   bool
}

func decimalFromInt(i int64) decimal { return decimal{v: big.NewInt(i)} }

// parseDecimal reads numeric_out's text ("-12.50", "NaN").
func parseDecimal(s string) (decimal, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "NaN") {
		return decimal{nan: true, v: new(big.Int)}, nil
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
	intPart, frac, _ := strings.Cut(s, ".")
	v, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok || strings.ContainsAny(s, "eE") {
		if strings.EqualFold(s, "Infinity") {
			return decimal{}, rewrite.Refusal("numeric infinity cannot be computed by the proxy yet")
		}
		return decimal{}, fmt.Errorf("engine: bad numeric %q", s)
	}
	if neg {
		v.Neg(v)
	}
	return decimal{v: v, scale: len(frac)}, nil
}

// String is numeric_out's text.
func (d decimal) String() string {
	if d.nan {
		return "NaN"
	}
	s := new(big.Int).Abs(d.v).String()
	if d.scale > 0 {
		if len(s) <= d.scale {
			s = strings.Repeat("0", d.scale-len(s)+1) + s
		}
		s = s[:len(s)-d.scale] + "." + s[len(s)-d.scale:]
	}
	if d.v.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// rescale returns d's digits at a larger scale.
func (d decimal) rescale(scale int) *big.Int {
	return new(big.Int).Mul(d.v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale-d.scale)), nil))
}

func (d decimal) add(e decimal) decimal {
	if d.nan || e.nan {
		return decimal{nan: true, v: new(big.Int)}
	}
	s := max(d.scale, e.scale)
	return decimal{v: new(big.Int).Add(d.rescale(s), e.rescale(s)), scale: s}
}

func (d decimal) neg() decimal {
	if d.nan {
		return d
	}
	return decimal{v: new(big.Int).Neg(d.v), scale: d.scale}
}

func (d decimal) sub(e decimal) decimal { return d.add(e.neg()) }

func (d decimal) mul(e decimal) decimal {
	if d.nan || e.nan {
		return decimal{nan: true, v: new(big.Int)}
	}
	return decimal{v: new(big.Int).Mul(d.v, e.v), scale: d.scale + e.scale}
}

// cmp orders as PostgreSQL does: NaN above every number.
func (d decimal) cmp(e decimal) int {
	switch {
	case d.nan && e.nan:
		return 0
	case d.nan:
		return 1
	case e.nan:
		return -1
	}
	s := max(d.scale, e.scale)
	return d.rescale(s).Cmp(e.rescale(s))
}

var errDivisionByZero = &pgconn.PgError{Severity: "ERROR", Code: "22012", Message: "division by zero"}

// div is numeric division at select_div_scale's scale (at least 16
// significant digits, at least both operands' scales), rounded half away
// from zero.
func (d decimal) div(e decimal) (decimal, error) {
	if d.nan || e.nan {
		return decimal{nan: true, v: new(big.Int)}, nil
	}
	if e.v.Sign() == 0 {
		return decimal{}, errDivisionByZero
	}
	ip1, f1 := splitDigits(d)
	ip2, f2 := splitDigits(e)
	w1, l1 := nbaseLead(ip1, f1)
	w2, l2 := nbaseLead(ip2, f2)
	qweight := w1 - w2
	if l1 <= l2 {
		qweight--
	}
	rscale := min(max(16-qweight*4, d.scale, e.scale, 0), 1000)
	// round(d / e, rscale) = round(d.v·10^(rscale+e.scale) / (e.v·10^d.scale))
	n := new(big.Int).Mul(new(big.Int).Abs(d.v), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(rscale+e.scale)), nil))
	m := new(big.Int).Mul(new(big.Int).Abs(e.v), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.scale)), nil))
	q, r := new(big.Int).QuoRem(n, m, new(big.Int))
	if new(big.Int).Lsh(r, 1).Cmp(m) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if d.v.Sign()*e.v.Sign() < 0 {
		q.Neg(q)
	}
	return decimal{v: q, scale: rscale}, nil
}

// splitDigits returns the integer and fraction digits of |d|.
func splitDigits(d decimal) (string, string) {
	s := strings.TrimPrefix(d.String(), "-")
	ip, frac, _ := strings.Cut(s, ".")
	return ip, frac
}
