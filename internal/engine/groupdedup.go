package engine

import (
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// rawGroups finds a row's group from the server's bytes of its grouping
// inputs, so that those inputs are decrypted once per group instead of
// once per row. A join repeats the cells of the one side on every row of
// the many side (TPC-H Q10 groups 11k lineitem rows by 7 columns of 3.8k
// customers): the same cell under the same salt is the same plaintext, so
// two rows with the same bytes in every grouping input fold into the same
// group. Rows with different bytes may still share a group (two RND cells
// of one value); they find it by the decrypted key as before.
//
// Inputs used by anything but the grouping (aggregate arguments, the
// proxy's WHERE) are decrypted on every row. When the bytes rarely repeat
// (a grouping column of the many side, like Q1's l_linestatus at RND),
// the lookups are dropped after a trial.
type rawGroups struct {
	cols   [][]int // per grouping input: the server columns whose bytes decide it
	skip   []bool  // per decrypted column: not needed once the group is known
	groups map[string]*group
	key    []byte
	tried  int // lookups so far
	hits   int
}

const (
	// rawTrial is how many rows try the lookup before it is judged.
	rawTrial = 4096
	// rawMaxGroups bounds the map.
	rawMaxGroups = 1 << 16
)

// newRawGroups returns the lookup for plan's grouping, or nil when it does
// not apply: no decryption to save, or a grouping input whose value does
// not follow from its bytes alone (a LEFT JOIN's null-extended side), or a
// decrypter that sorts or holds rows.
func newRawGroups(a *aggregator) *rawGroups {
	p := a.plan
	if p.Ungrouped || len(p.Group) == 0 || p.JoinResidual != nil || a.d == nil || a.d.p.sort != nil {
		return nil
	}
	grouping := map[int]bool{}
	for _, g := range p.Group {
		walkExpr(g, func(x *ir.Expr) {
			if x.Kind == ir.ExprInput {
				grouping[x.Input] = true
			}
		})
	}
	perRow := map[int]bool{}
	var inputsOf func(e *ir.Expr)
	inputsOf = func(e *ir.Expr) {
		walkExpr(e, func(x *ir.Expr) {
			if x.Kind == ir.ExprInput {
				perRow[x.Input] = true
			}
		})
	}
	for _, ag := range a.aggList {
		for _, arg := range ag.e.Args {
			inputsOf(arg)
		}
	}
	inputsOf(p.Where)
	r := &rawGroups{skip: make([]bool, a.d.p.shown()), groups: map[string]*group{}}
	saves := false
	for i := range p.Inputs {
		if !grouping[i] {
			continue
		}
		if i >= len(r.skip) {
			return nil
		}
		c := &a.d.p.cols[i]
		cols := []int{c.server}
		if c.x != nil {
			if c.decode != rewrite.DecodeValue {
				return nil
			}
			salt := a.d.p.salt
			if c.rowSalt >= 0 {
				salt = c.rowSalt
			}
			for _, s := range []int{c.val, salt, c.salt, c.add} {
				if s >= 0 {
					cols = append(cols, s)
				}
			}
			if !perRow[i] {
				r.skip[i] = true
				saves = true
			}
		}
		r.cols = append(r.cols, cols)
	}
	if !saves {
		return nil
	}
	return r
}

// lookup returns the group of rows with row's bytes in the grouping
// inputs, or nil; the key stays for store.
func (r *rawGroups) lookup(row *pgproto3.DataRow) *group {
	r.key = r.key[:0]
	for _, cols := range r.cols {
		for _, c := range cols {
			v := row.Values[c]
			if v == nil {
				r.key = append(r.key, 0xff, 0xff, 0xff, 0xff) // no length is all ones
				continue
			}
			n := len(v)
			r.key = append(r.key, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
			r.key = append(r.key, v...)
		}
	}
	r.tried++
	g := r.groups[string(r.key)]
	if g != nil {
		r.hits++
	}
	return g
}

// store remembers g as the group of the row lookup last saw.
func (r *rawGroups) store(g *group) {
	if len(r.groups) < rawMaxGroups {
		r.groups[string(r.key)] = g
	}
}

// worthIt reports whether the lookups save more than they cost so far: at
// least one row in four found its group.
func (r *rawGroups) worthIt() bool {
	return r.tried < rawTrial || r.hits*4 >= r.tried
}
