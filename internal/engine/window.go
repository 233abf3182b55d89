package engine

import (
	"slices"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Window functions of an ungrouped split execution: row_number, rank,
// dense_rank and the aggregates sum, avg, count, min and max over
// PARTITION BY and ORDER BY with the default frame (from the partition's
// start to the current row's last peer; the whole partition without
// ORDER BY), computed once every row that passed WHERE is known, before
// the select list, ORDER BY and LIMIT, as PostgreSQL does. Rows that are
// peers under a window's ORDER BY keep the order they arrived in, which
// decides row_number among them (PostgreSQL's is its sort's).

// windowType is the type of window function e.
func (ev *evaluator) windowType(e *rewrite.Expr) (onion.Type, error) {
	switch e.Func {
	case "row_number", "rank", "dense_rank":
		return tInt8, nil
	}
	return ev.typeOf(asAggregate(e))
}

// asAggregate is window function e's aggregate (sum, avg, count, min,
// max) as an ExprAgg, for its type and its state.
func asAggregate(e *rewrite.Expr) *rewrite.Expr {
	return &rewrite.Expr{Kind: rewrite.ExprAgg, Func: e.Func, Star: e.Star, Args: e.Args}
}

// computeWindows sets the window function values of every row of a.order.
func (a *aggregator) computeWindows() error {
	rows := a.order
	for _, g := range rows {
		g.wins = make([]aval, len(a.winList))
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
	g     *group
	part  string // partition key
	order []aval // ORDER BY keys
	arg   aval   // the aggregate's argument
}

func (a *aggregator) computeWindow(k int, w *rewrite.Expr, rows []*group) error {
	ev := a.ev
	wr := make([]windowRow, len(rows))
	for i, g := range rows {
		sc := &scope{row: g.row}
		r := windowRow{g: g}
		var key []byte
		for _, p := range w.Window.Partition {
			v, err := ev.eval(p, sc)
			if err != nil {
				return err
			}
			key = append(v.appendKey(key, ev.env), 0)
		}
		r.part = string(key)
		for _, o := range w.Window.Order {
			v, err := ev.eval(o.Expr, sc)
			if err != nil {
				return err
			}
			r.order = append(r.order, v)
		}
		if len(w.Args) == 1 {
			v, err := ev.eval(w.Args[0], sc)
			if err != nil {
				return err
			}
			r.arg = v
		}
		wr[i] = r
	}
	var sortErr error
	orderCmp := func(x, y windowRow) int { return compareSortKeys(x.order, y.order, w.Window.Order, &sortErr) }
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
	agg := asAggregate(w)
	for start := 0; start < len(wr); {
		end := start
		for end < len(wr) && wr[end].part == wr[start].part {
			end++
		}
		part := wr[start:end]
		var st aggState
		rank, dense := int64(1), int64(0)
		for i := 0; i < len(part); {
			j := i + 1
			if len(w.Window.Order) > 0 {
				for j < len(part) && orderCmp(part[i], part[j]) == 0 {
					j++
				}
			} else {
				j = len(part) // no ORDER BY: every row is a peer
			}
			if sortErr != nil {
				return sortErr
			}
			dense++
			var val aval
			switch w.Func {
			case "row_number", "rank", "dense_rank":
			default:
				for _, r := range part[i:j] {
					if w.Star {
						st.count++
						continue
					}
					if r.arg.null {
						continue
					}
					if err := st.add(w.Func, r.arg); err != nil {
						return err
					}
				}
				var err error
				if val, err = a.result(agg, &st); err != nil {
					return err
				}
			}
			for n, r := range part[i:j] {
				switch w.Func {
				case "row_number":
					r.g.wins[k] = aval{t: tInt8, i: int64(i + n + 1)}
				case "rank":
					r.g.wins[k] = aval{t: tInt8, i: rank}
				case "dense_rank":
					r.g.wins[k] = aval{t: tInt8, i: dense}
				default:
					r.g.wins[k] = val
				}
			}
			rank += int64(j - i)
			i = j
		}
		start = end
	}
	return nil
}
