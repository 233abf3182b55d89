package exec

import (
	"fmt"
	"math"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Window functions of an ungrouped split execution, computed once every
// row that passed WHERE is known, before the select list, ORDER BY and
// LIMIT, as PostgreSQL does (nodeWindowAgg.c):
//
//   - row_number, rank, dense_rank, percent_rank, cume_dist and ntile
//     from the row's place among its partition's peer groups;
//   - lag and lead from the row an offset before or after it in its
//     partition, whatever the frame;
//   - the aggregates sum, avg, count, min and max, and first_value,
//     last_value and nth_value, over the row's frame (ROWS, GROUPS, or
//     RANGE without offsets; with EXCLUDE), in partition order: double
//     precision sums add in the order PostgreSQL's do.
//
// Rows that are peers under a window's ORDER BY keep the order they
// arrived in, which decides row_number among them (PostgreSQL's is its
// sort's).

// windowType is the type of window function e.
func (ev *Evaluator) windowType(e *ir.Expr) (onion.Type, error) {
	switch e.Func {
	case "row_number", "rank", "dense_rank":
		return TypeInt8, nil
	case "ntile":
		return TypeInt4, nil
	case "percent_rank", "cume_dist":
		return TypeFloat8, nil
	case "lag", "lead":
		var t *onion.Type
		for _, i := range []int{0, 2} {
			if i < len(e.Args) {
				if err := ev.unify(&t, e.Args[i]); err != nil {
					return onion.Type{}, err
				}
			}
		}
		if t == nil {
			return TypeText, nil
		}
		return *t, nil
	case "first_value", "last_value", "nth_value":
		if IsUnknown(e.Args[0]) {
			return TypeText, nil
		}
		return ev.TypeOf(e.Args[0])
	}
	return ev.TypeOf(asAggregate(e))
}

// asAggregate is window function e's aggregate (sum, avg, count, min,
// max) as an ExprAgg, for its type and its state.
func asAggregate(e *ir.Expr) *ir.Expr {
	return &ir.Expr{Kind: ir.ExprAgg, Func: e.Func, Star: e.Star, Args: e.Args}
}

// windows computes the window functions of a split execution's plan.
type windows struct {
	ev      *Evaluator
	winList []*ir.Expr // the window functions of ev.wins, in index order
}

// ComputeWindows sets the values of window functions list (ev's, in
// index order) in rows; see computeWindows.
func ComputeWindows(ev *Evaluator, list []*ir.Expr, rows []*Scope) error {
	return (&windows{ev: ev, winList: list}).computeWindows(rows)
}

// computeWindows sets the window function values of rows: the input
// rows of an ungrouped plan, the groups that passed HAVING of a grouped
// one (their scopes read their aggregates).
func (a *windows) computeWindows(rows []*Scope) error {
	for _, sc := range rows {
		sc.Wins = make([]Value, len(a.winList))
	}
	for k, w := range a.winList {
		if err := a.computeWindow(k, w, rows); err != nil {
			return err
		}
	}
	return nil
}

// windowRow is one row as a window sees it.
type windowRow struct {
	g     *Scope
	part  string  // partition key
	order []Value // ORDER BY keys
	args  []Value // the function's arguments
}

// windowPart is one partition, in window order, with its peer groups:
// peer[i] is row i's group, groups[k] the index of group k's first row
// (groups[len] is the partition's length).
type windowPart struct {
	rows   []windowRow
	peer   []int
	groups []int
}

func (p *windowPart) peerStart(i int) int { return p.groups[p.peer[i]] }

// groupAt is the first row of peer group k, clamped to the partition.
func (p *windowPart) groupAt(k int64) int {
	switch {
	case k < 0:
		return 0
	case k >= int64(len(p.groups)-1):
		return len(p.rows)
	}
	return p.groups[k]
}
func (p *windowPart) peerEnd(i int) int { return p.groups[p.peer[i]+1] }

func (a *windows) computeWindow(k int, w *ir.Expr, rows []*Scope) error {
	ev := a.ev
	wr := make([]windowRow, len(rows))
	for i, sc := range rows {
		r := windowRow{g: sc}
		var key []byte
		for _, p := range w.Window.Partition {
			v, err := ev.Eval(p, sc)
			if err != nil {
				return err
			}
			key = append(v.AppendKey(key, ev.Env), 0)
		}
		r.part = string(key)
		for _, o := range w.Window.Order {
			v, err := ev.Eval(o.Expr, sc)
			if err != nil {
				return err
			}
			r.order = append(r.order, v)
		}
		for j, arg := range w.Args {
			var v Value
			var err error
			switch {
			case j == 1 || w.Func == "ntile":
				// lag and lead's offset, nth_value's n, ntile's count.
				v, err = ev.castTo(arg, TypeInt8, sc)
			case j == 2:
				// lag and lead's default, of the value's type.
				var t onion.Type
				if t, err = ev.TypeOf(w); err == nil {
					v, err = ev.castTo(arg, t, sc)
				}
			default:
				v, err = ev.Eval(arg, sc)
			}
			if err != nil {
				return err
			}
			r.args = append(r.args, v)
		}
		wr[i] = r
	}
	var sortErr error
	orderCmp := func(x, y windowRow) int { return CompareSortKeys(x.order, y.order, w.Window.Order, &sortErr) }
	// Partitions in order of their first row; within, by the window's
	// ORDER BY, peers in arrival order.
	first := map[string]int{}
	for i, r := range wr {
		if _, ok := first[r.part]; !ok {
			first[r.part] = i
		}
	}
	slices.SortStableFunc(wr, func(x, y windowRow) int {
		if x.part != y.part {
			return first[x.part] - first[y.part]
		}
		return orderCmp(x, y)
	})
	if sortErr != nil {
		return sortErr
	}
	fr, err := a.windowFrame(w)
	if err != nil {
		return err
	}
	for start := 0; start < len(wr); {
		end := start
		for end < len(wr) && wr[end].part == wr[start].part {
			end++
		}
		p := &windowPart{rows: wr[start:end], peer: make([]int, end-start)}
		for i := range p.rows {
			// Without ORDER BY every row is a peer of every other.
			if i == 0 || len(w.Window.Order) > 0 && orderCmp(p.rows[i-1], p.rows[i]) != 0 {
				p.groups = append(p.groups, i)
			}
			p.peer[i] = len(p.groups) - 1
		}
		if sortErr != nil {
			return sortErr
		}
		p.groups = append(p.groups, len(p.rows))
		if err := a.windowValues(k, w, p, fr); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// frameSpec is a window's frame with its offsets evaluated.
type frameSpec struct {
	mode                   ir.FrameMode
	start, end             ir.BoundKind
	startOffset, endOffset int64
	exclude                ir.FrameExclusion
	// RANGE with offsets: the offsets as numbers, and the order of the
	// window's one ORDER BY key.
	startRange, endRange Decimal
	desc, nullsFirst     bool
}

// windowFrame evaluates w's frame (the default one when it has none):
// offsets are bigint constants, neither NULL nor negative.
func (a *windows) windowFrame(w *ir.Expr) (frameSpec, error) {
	f := w.Window.Frame
	if f == nil {
		return frameSpec{mode: ir.FrameRange, start: ir.UnboundedPreceding, end: ir.CurrentRow}, nil
	}
	out := frameSpec{mode: f.Mode, start: f.Start.Kind, end: f.End.Kind, exclude: f.Exclude}
	offset := func(b ir.FrameBound, which string) (int64, error) {
		if b.Offset == nil {
			return 0, nil
		}
		v, err := a.ev.castTo(b.Offset, TypeInt8, &Scope{})
		switch {
		case err != nil:
			return 0, err
		case v.Null:
			return 0, &pgconn.PgError{Severity: "ERROR", Code: "22004", Message: "frame " + which + " offset must not be null"}
		case v.Int < 0:
			return 0, &pgconn.PgError{Severity: "ERROR", Code: "22013", Message: "frame " + which + " offset must not be negative"}
		}
		return v.Int, nil
	}
	if f.Mode == ir.FrameRange {
		return a.rangeFrame(w, out)
	}
	var err error
	if out.startOffset, err = offset(f.Start, "starting"); err != nil {
		return out, err
	}
	out.endOffset, err = offset(f.End, "ending")
	return out, err
}

// rangeFrame reads a RANGE frame's offsets: distances in the values of
// the window's one ORDER BY key, an integer or numeric one here.
func (a *windows) rangeFrame(w *ir.Expr, out frameSpec) (frameSpec, error) {
	f := w.Window.Frame
	if f.Start.Offset == nil && f.End.Offset == nil {
		return out, nil
	}
	key := w.Window.Order[0] // exactly one: rewrite checked
	out.desc, out.nullsFirst = key.Desc, key.NullsFirst
	kt, err := a.ev.TypeOf(key.Expr)
	if err != nil {
		return out, err
	}
	kk, _ := KindOf(kt)
	if kk != KindInt && kk != KindNumeric {
		return out, rewrite.Refusal("RANGE with offset PRECEDING/FOLLOWING over a window ordered by %s is not supported in a query the proxy computes (integer and numeric only)", kt)
	}
	offset := func(b ir.FrameBound, which string) (Decimal, error) {
		if b.Offset == nil {
			return Decimal{}, nil
		}
		want := TypeNumeric
		if kk == KindInt {
			// in_range takes integer offsets for integer keys.
			ot, err := a.ev.TypeOf(b.Offset)
			if err != nil {
				return Decimal{}, err
			}
			if ok, _ := KindOf(ot); ok != KindInt && !IsUnknown(b.Offset) {
				// PostgreSQL's own 0A000, not a refusal.
				return Decimal{}, &pgconn.PgError{Severity: "ERROR", Code: "0A000",
					Message: fmt.Sprintf("RANGE with offset PRECEDING/FOLLOWING is not supported for column type %s and offset type %s", kt, ot),
					Hint:    "Cast the offset value to an appropriate type."}
			}
			want = TypeInt8
		}
		v, err := a.ev.castTo(b.Offset, want, &Scope{})
		switch {
		case err != nil:
			return Decimal{}, err
		case v.Null:
			return Decimal{}, &pgconn.PgError{Severity: "ERROR", Code: "22004", Message: "frame " + which + " offset must not be null"}
		}
		d := v.Numeric()
		if d.IsNaN() || d.Sign() < 0 || d.IsInf() && kk == KindInt {
			return Decimal{}, &pgconn.PgError{Severity: "ERROR", Code: "22013", Message: "invalid preceding or following size in window function"}
		}
		return d, nil
	}
	if out.startRange, err = offset(f.Start, "starting"); err != nil {
		return out, err
	}
	out.endRange, err = offset(f.End, "ending")
	return out, err
}

// inRange is PostgreSQL's in_range for numbers (in_range_numeric_numeric;
// the integer ones agree on values that fit): whether val <= base ±
// offset (less) or val >= base ± offset (not less), NaN after every
// other value.
func inRange(val, base, offset Decimal, sub, less bool) bool {
	switch {
	case val.IsNaN():
		return base.IsNaN() || !less
	case base.IsNaN():
		return less
	case offset.IsInf():
		if sub && base.IsInf() && base.Sign() > 0 || !sub && base.IsInf() && base.Sign() < 0 {
			return true // base ± offset would be NaN
		}
		if sub {
			return !less || val.IsInf() && val.Sign() < 0
		}
		return less || val.IsInf() && val.Sign() > 0
	}
	var sum Decimal
	var err error
	if sub {
		sum, err = base.Sub(offset)
	} else {
		sum, err = base.Add(offset)
	}
	if err != nil {
		return !less // beyond numeric's range: no value is past it
	}
	if less {
		return val.Cmp(sum) <= 0
	}
	return val.Cmp(sum) >= 0
}

// rangeBound is where row i's RANGE frame starts at an offset (the
// first row in it) or, with end, ends at one (the row after its last).
// It scans as PostgreSQL's update_frameheadpos and update_frametailpos
// do: a NULL row's bound is its peers' (the NULLs); for other rows NULLs
// sort first or last, so a frame reaching the partition's end includes
// NULLS LAST rows.
func (fr *frameSpec) rangeBound(p *windowPart, i int, end bool) int {
	base := p.rows[i].order[0]
	switch {
	case base.Null && end:
		return p.peerEnd(i)
	case base.Null:
		return p.peerStart(i)
	}
	kind, offset := fr.start, fr.startRange
	if end {
		kind, offset = fr.end, fr.endRange
	}
	// in_range's flags: the head is the first row >= base - offset, the
	// tail the first row not <= base + offset; descending flips both.
	sub, less := kind == ir.OffsetPreceding, end
	if fr.desc {
		sub, less = !sub, !less
	}
	for j, r := range p.rows {
		switch k := r.order[0]; {
		case k.Null && fr.nullsFirst:
		case k.Null:
			return j // the NULLs after every value
		case inRange(k.Numeric(), base.Numeric(), offset, sub, less) != end:
			return j
		}
	}
	return len(p.rows)
}

// bounds is row i's frame [lo, hi) in p, before exclusions.
func (fr *frameSpec) bounds(p *windowPart, i int) (lo, hi int) {
	n := len(p.rows)
	switch fr.start {
	case ir.UnboundedPreceding:
		lo = 0
	case ir.CurrentRow:
		lo = i
		if fr.mode != ir.FrameRows {
			lo = p.peerStart(i)
		}
	case ir.OffsetPreceding, ir.OffsetFollowing:
		lo = fr.offsetBound(p, i, false)
	default:
		lo = n
	}
	switch fr.end {
	case ir.UnboundedFollowing:
		hi = n
	case ir.CurrentRow:
		hi = i + 1
		if fr.mode != ir.FrameRows {
			hi = p.peerEnd(i)
		}
	case ir.OffsetPreceding, ir.OffsetFollowing:
		hi = fr.offsetBound(p, i, true)
	default:
		hi = 0
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// offsetBound is where row i's frame starts at an offset (the first row
// in it) or, with end, ends at one (the row after its last): that many
// rows or peer groups away, or (RANGE) values.
func (fr *frameSpec) offsetBound(p *windowPart, i int, end bool) int {
	kind, offset, past := fr.start, fr.startOffset, int64(0)
	if end {
		kind, offset, past = fr.end, fr.endOffset, 1
	}
	sign := int64(1)
	if kind == ir.OffsetPreceding {
		sign = -1
	}
	switch fr.mode {
	case ir.FrameRows:
		return clampRow(addSigned(int64(i), sign, offset)+past, len(p.rows))
	case ir.FrameGroups:
		return p.groupAt(addSigned(int64(p.peer[i]), sign, offset) + past)
	}
	return fr.rangeBound(p, i, end)
}

// excluded reports whether row j is excluded from row i's frame.
func (fr *frameSpec) excluded(p *windowPart, i, j int) bool {
	switch fr.exclude {
	case ir.ExcludeCurrentRow:
		return j == i
	case ir.ExcludeGroup:
		return p.peer[j] == p.peer[i]
	case ir.ExcludeTies:
		return j != i && p.peer[j] == p.peer[i]
	}
	return false
}

func clampRow(x int64, n int) int { return int(max(0, min(x, int64(n)))) }

// addSigned is x + sign*y for y >= 0 and x well inside int64,
// saturating: a row or group that far away is outside any partition.
func addSigned(x, sign, y int64) int64 {
	switch {
	case sign > 0 && x > math.MaxInt64/2-y:
		return math.MaxInt64 / 2
	case sign < 0 && x < math.MinInt64/2+y:
		return math.MinInt64 / 2
	}
	return x + sign*y
}

// windowValues sets window function k's value for the rows of one
// partition.
func (a *windows) windowValues(k int, w *ir.Expr, p *windowPart, fr frameSpec) error {
	n := len(p.rows)
	set := func(i int, v Value) { p.rows[i].g.Wins[k] = v }
	t, err := a.ev.TypeOf(w)
	if err != nil {
		return err
	}
	switch w.Func {
	case "row_number", "rank", "dense_rank", "percent_rank", "cume_dist":
		for i := range p.rows {
			rank := int64(p.peerStart(i) + 1)
			switch w.Func {
			case "row_number":
				set(i, Value{Type: TypeInt8, Int: int64(i + 1)})
			case "rank":
				set(i, Value{Type: TypeInt8, Int: rank})
			case "dense_rank":
				set(i, Value{Type: TypeInt8, Int: int64(p.peer[i] + 1)})
			case "percent_rank":
				v := 0.0
				if n > 1 {
					v = float64(rank-1) / float64(n-1)
				}
				set(i, Float8Value(v))
			case "cume_dist":
				set(i, Float8Value(float64(p.peerEnd(i))/float64(n)))
			}
		}
		return nil
	case "ntile":
		// The bucket count is read on the partition's first row.
		b := p.rows[0].args[0]
		if b.Null {
			for i := range p.rows {
				set(i, NullOf(TypeInt4))
			}
			return nil
		}
		if b.Int <= 0 {
			return &pgconn.PgError{Severity: "ERROR", Code: "22014", Message: "argument of ntile must be greater than zero"}
		}
		for i := range p.rows {
			set(i, Int4Value(ntileOf(int64(i), int64(n), b.Int)))
		}
		return nil
	case "lag", "lead":
		for i, r := range p.rows {
			off := int64(1)
			if len(r.args) > 1 {
				if r.args[1].Null {
					set(i, NullOf(t))
					continue
				}
				off = r.args[1].Int
			}
			if w.Func == "lag" {
				off = -off
			}
			j := int64(-1) // outside the partition
			if off >= -int64(n) && off <= int64(n) {
				j = int64(i) + off
			}
			switch {
			case j >= 0 && j < int64(n):
				v, err := ConvertTo(p.rows[j].args[0], t, a.ev.Env)
				if err != nil {
					return err
				}
				set(i, v)
			case len(r.args) > 2:
				set(i, r.args[2])
			default:
				set(i, NullOf(t))
			}
		}
		return nil
	case "first_value", "last_value", "nth_value":
		for i, r := range p.rows {
			lo, hi := fr.bounds(p, i)
			nth := int64(1)
			if w.Func == "nth_value" {
				if r.args[1].Null {
					set(i, NullOf(t))
					continue
				}
				if nth = r.args[1].Int; nth <= 0 {
					return &pgconn.PgError{Severity: "ERROR", Code: "22016", Message: "argument of nth_value must be greater than zero"}
				}
			}
			v := NullOf(t)
			var seen int64
			if w.Func == "last_value" {
				for j := hi - 1; j >= lo; j-- {
					if !fr.excluded(p, i, j) {
						v = p.rows[j].args[0]
						break
					}
				}
			} else {
				for j := lo; j < hi; j++ {
					if fr.excluded(p, i, j) {
						continue
					}
					if seen++; seen == nth {
						v = p.rows[j].args[0]
						break
					}
				}
			}
			v, err := ConvertTo(v, t, a.ev.Env)
			if err != nil {
				return err
			}
			set(i, v)
		}
		return nil
	}
	return a.windowAggregates(w, p, fr, set)
}

// ntileOf is the bucket (1-based) of row i of n split into b buckets:
// the first n mod b buckets have one row more, as PostgreSQL's ntile.
func ntileOf(i, n, b int64) int64 {
	if b > n {
		return i + 1
	}
	per, extra := n/b, n%b
	if big := extra * (per + 1); i < big {
		return i/(per+1) + 1
	} else {
		return extra + (i-big)/per + 1
	}
}

// windowAggregates computes an aggregate over each row's frame. A frame
// that starts at the partition's start, without exclusions, only grows
// from row to row: its state is carried on.
func (a *windows) windowAggregates(w *ir.Expr, p *windowPart, fr frameSpec, set func(int, Value)) error {
	agg := asAggregate(w)
	add := func(st *AggState, r windowRow) error {
		if w.Star {
			st.count++
			return nil
		}
		if r.args[0].Null {
			return nil
		}
		return st.Add(w.Func, r.args[0])
	}
	growing := fr.start == ir.UnboundedPreceding && fr.exclude == ir.ExcludeNoOthers
	var st AggState
	added := 0
	prevLo, prevHi := -1, -1
	var prev Value
	for i := range p.rows {
		lo, hi := fr.bounds(p, i)
		if lo == prevLo && hi == prevHi && fr.exclude == ir.ExcludeNoOthers {
			set(i, prev) // the same frame: the same value
			continue
		}
		if growing {
			for ; added < hi; added++ {
				if err := add(&st, p.rows[added]); err != nil {
					return err
				}
			}
		} else {
			st = AggState{}
			for j := lo; j < hi; j++ {
				if fr.excluded(p, i, j) {
					continue
				}
				if err := add(&st, p.rows[j]); err != nil {
					return err
				}
			}
		}
		v, err := a.ev.AggResult(agg, &st)
		if err != nil {
			return err
		}
		set(i, v)
		prevLo, prevHi, prev = lo, hi, v
	}
	return nil
}
