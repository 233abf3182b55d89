package exec

import (
	"math"
	"slices"
	"strings"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgnumeric"
)

// AggState is one aggregate over one group. DISTINCT aggregates only
// collect their distinct values (by grouping key) and are computed from
// them at the end, so that the states of two workers merge.
type AggState struct {
	count int64
	sum   pgnumeric.Sum
	// fsum and fsum2 are the sum and the sum of squares of double
	// precision values (float8_accum's sumX and sumX2).
	fsum, fsum2 float64
	// isum is the sum of interval values (interval_accum).
	isum Interval
	// sum2 is the sum of squares of numeric values, fsxx the sum of
	// squared deviations of double precision ones (float8_accum's
	// Youngs-Cramer Sxx), for the variances.
	sum2     pgnumeric.Sum
	fsxx     float64
	best     Value // min or max
	distinct map[string]Value
}

// Add folds a non-NULL value into the state of aggregate fn.
func (st *AggState) Add(fn string, v Value) error {
	st.count++
	switch fn {
	case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
		if k, _ := KindOf(v.Type); k == KindFloat {
			return st.addDeviation(v.float())
		}
		x := v.Numeric()
		st.sum.Add(x)
		if x.IsFinite() {
			sq, err := x.Mul(x)
			if err != nil {
				return err
			}
			st.sum2.Add(sq)
		} else {
			st.sum2.Add(x)
		}
	case "sum", "avg":
		switch k, _ := KindOf(v.Type); k {
		case KindFloat:
			return st.addFloat(fn, v.float())
		case KindInterval:
			var err error
			st.isum, err = st.isum.add(IntervalOf(v))
			return err
		}
		st.sum.Add(v.Numeric())
	case "min", "max":
		if st.count == 1 {
			st.best = v
			return nil
		}
		c, err := Compare(v, st.best)
		if err != nil {
			return err
		}
		// Of equal values (1.0 and 1.00) the later one, as
		// numeric_larger and the other transition functions keep.
		if (fn == "min" && c <= 0) || (fn == "max" && c >= 0) {
			st.best = v
		}
	}
	return nil
}

// addFloat folds a double precision value into a sum (float8pl) or an
// average (float8_accum: its sum of squares overflows too).
func (st *AggState) addFloat(fn string, x float64) error {
	s, err := floatAdd(st.fsum, x)
	if err != nil {
		return err
	}
	st.fsum = s
	if fn == "avg" {
		if st.fsum2, err = floatAdd(st.fsum2, x*x); err != nil {
			return err
		}
	}
	return nil
}

// addDeviation folds a double precision value into a variance's state
// (st.count already counts it) as float8_accum does (Youngs-Cramer).
func (st *AggState) addDeviation(x float64) error {
	old := st.fsum
	st.fsum += x
	n := float64(st.count)
	if st.count > 1 {
		tmp := x*n - st.fsum
		st.fsxx += tmp * tmp / (n * (n - 1))
		if math.IsInf(st.fsum, 0) || math.IsInf(st.fsxx, 0) {
			if !math.IsInf(old, 0) && !math.IsInf(x, 0) {
				return ErrOverflow
			}
			st.fsxx = math.NaN()
		}
	} else if math.IsNaN(x) || math.IsInf(x, 0) {
		st.fsxx = math.NaN()
	}
	return nil
}

// variance is the value of a variance or standard deviation aggregate
// fn from its state.
func (st *AggState) variance(fn string, t onion.Type) (Value, error) {
	sample := fn != "stddev_pop" && fn != "var_pop"
	stddev := strings.HasPrefix(fn, "stddev")
	if t.Base == onion.Float8 {
		n := float64(st.count)
		if st.count == 0 || sample && st.count <= 1 {
			return NullOf(t), nil
		}
		v := st.fsxx / n
		if sample {
			v = st.fsxx / (n - 1)
		}
		if stddev {
			v = math.Sqrt(v)
		}
		return Float8Value(v), nil
	}
	sx, ok, err := st.sum.Result()
	if err != nil || !ok {
		return NullOf(t), err
	}
	sx2, _, err := st.sum2.Result()
	if err != nil {
		return Value{}, err
	}
	nonFinite := !sx.IsFinite() || !sx2.IsFinite()
	v, ok, err := pgnumeric.Variance(sx, sx2, st.count, nonFinite, sample, stddev)
	if err != nil || !ok {
		return NullOf(t), err
	}
	return Value{Type: TypeNumeric, Num: v}, nil
}

// floatAdd is a + b with CHECKFLOATVAL's overflow check.
func floatAdd(a, b float64) (float64, error) {
	s := a + b
	if math.IsInf(s, 0) && !math.IsInf(a, 0) && !math.IsInf(b, 0) {
		return 0, ErrOverflow
	}
	return s, nil
}

// Merge folds another worker's state of the same aggregate e into st.
func (st *AggState) Merge(o *AggState, e *ir.Expr) error {
	if e.Distinct {
		if st.distinct == nil {
			st.distinct = o.distinct
			return nil
		}
		for k, v := range o.distinct {
			if _, ok := st.distinct[k]; !ok {
				st.distinct[k] = v
			}
		}
		return nil
	}
	switch {
	case o.count == 0:
		return nil
	case st.count == 0:
		*st = *o
		return nil
	}
	if e.Func == "min" || e.Func == "max" {
		c, err := Compare(o.best, st.best)
		if err != nil {
			return err
		}
		if (e.Func == "min" && c < 0) || (e.Func == "max" && c > 0) {
			st.best = o.best
		}
	}
	if e.Func != "avg" && e.Func != "sum" && e.Func != "count" && e.Func != "min" && e.Func != "max" {
		// float8_combine's Sxx, before the counts are summed.
		n1, n2 := float64(st.count), float64(o.count)
		tmp := st.fsum/n1 - o.fsum/n2
		st.fsxx += o.fsxx + n1*n2*tmp*tmp/(n1+n2)
	}
	st.count += o.count
	st.sum.Merge(&o.sum)
	st.sum2.Merge(&o.sum2)
	var err error
	if st.isum, err = st.isum.add(o.isum); err != nil {
		return err
	}
	if st.fsum, err = floatAdd(st.fsum, o.fsum); err != nil {
		return err
	}
	st.fsum2, err = floatAdd(st.fsum2, o.fsum2)
	return err
}

// AggResult is an aggregate's value from its state.
func (ev *Evaluator) AggResult(e *ir.Expr, st *AggState) (Value, error) {
	t, err := ev.TypeOf(e)
	if err != nil {
		return Value{}, err
	}
	if e.Distinct && !e.Star {
		// Computed from the distinct values now, in ascending order
		// as PostgreSQL sorts them (numeric sums are exact; double
		// precision ones depend on the order).
		vals := make([]Value, 0, len(st.distinct))
		for _, v := range st.distinct {
			vals = append(vals, v)
		}
		var sortErr error
		slices.SortFunc(vals, func(x, y Value) int {
			c, err := Compare(x, y)
			if err != nil && sortErr == nil {
				sortErr = err
			}
			return c
		})
		if sortErr != nil {
			return Value{}, sortErr
		}
		d := AggState{}
		for _, v := range vals {
			if err := d.Add(e.Func, v); err != nil {
				return Value{}, err
			}
		}
		st = &d
	}
	switch e.Func {
	case "count":
		return Value{Type: TypeInt8, Int: st.count}, nil
	case "min", "max":
		if st.count == 0 {
			return NullOf(t), nil
		}
		return st.best, nil
	}
	switch e.Func {
	case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
		return st.variance(e.Func, t)
	}
	if st.count == 0 {
		return NullOf(t), nil
	}
	switch t.Base {
	case onion.Float8:
		if e.Func == "avg" {
			return Float8Value(st.fsum / float64(st.count)), nil
		}
		return Float8Value(st.fsum), nil
	case onion.Interval:
		if e.Func == "avg" {
			q, err := IntervalDiv(st.isum, float64(st.count))
			return q.val(), err
		}
		return st.isum.val(), nil
	}
	if e.Func == "avg" {
		q, _, err := st.sum.Avg()
		return Value{Type: TypeNumeric, Num: q}, err
	}
	sum, _, err := st.sum.Result()
	if err != nil {
		return Value{}, err
	}
	if t.Base == onion.BigInt {
		c := sum.Coefficient()
		if !sum.IsFinite() || sum.Scale() != 0 || !c.IsInt64() {
			return IntRange(t, 0, true)
		}
		return Value{Type: t, Int: c.Int64()}, nil
	}
	return Value{Type: t, Num: sum}, nil
}

// Accumulate adds the value of aggregate e's argument in sc to st. A
// DISTINCT aggregate keeps each distinct value, after charge accepts the
// bytes of its key.
func (ev *Evaluator) Accumulate(st *AggState, e *ir.Expr, sc *Scope, charge func(keyBytes int) error) error {
	if e.Star {
		st.count++
		return nil
	}
	v, err := ev.Eval(e.Args[0], sc)
	if err != nil || v.Null {
		return err
	}
	if e.Distinct {
		if st.distinct == nil {
			st.distinct = map[string]Value{}
		}
		k := v.KeyOf(ev.Env)
		if _, ok := st.distinct[k]; !ok {
			if err := charge(len(k)); err != nil {
				return err
			}
			st.distinct[k] = v
		}
		return nil
	}
	return st.Add(e.Func, v)
}
