package engine

import (
	"fmt"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Generated columns over encrypted columns are computed here, from the
// values of each row an INSERT writes (rewrite/generation.go says which
// columns and why; an UPDATE recomputes them by read-modify-write).

// rowGenerations are the proxy-computed generated columns of one table
// version.
type rowGenerations struct {
	table string
	gens  []*rewrite.Generation
	in    [][]onion.Type // of each expression's inputs
	out   []onion.Type   // of each generated column
}

// generationsOf returns t's generated columns the proxy computes, planned
// in env (nil when it has none).
func (e *Engine) generationsOf(t *catalog.Table, env onion.Env) (*rowGenerations, error) {
	if len(rewrite.Generated(t)) == 0 {
		return nil, nil
	}
	key := fmt.Sprint(t.ID, t.Version)
	if rg, ok := e.generationCache.Load(key); ok {
		return rg.(*rowGenerations), nil
	}
	rg, err := e.planGenerations(t, env)
	if err != nil {
		return nil, err
	}
	e.generationCache.Store(key, rg)
	return rg, nil
}

// planGenerations plans t's generated columns, refusing one the proxy
// cannot compute in env (the database's LC_CTYPE decides lower and
// upper).
func (e *Engine) planGenerations(t *catalog.Table, env onion.Env) (*rowGenerations, error) {
	rg := &rowGenerations{table: t.Name}
	for _, c := range rewrite.Generated(t) {
		g, err := rewrite.PlanGeneration(c, t)
		if err != nil {
			return nil, err
		}
		in := make([]onion.Type, len(g.Columns))
		for i, col := range g.Columns {
			if err := e.collationRefusal(t.Name, col); err != nil {
				return nil, err
			}
			if in[i], err = rewrite.ColumnType(col); err == nil {
				err = storedExprType(in[i])
			}
			if err != nil {
				return nil, rewrite.Refusal("generated column %s.%s reads column %s of type %s, which the proxy cannot compute with yet", t.Name, c.Name, col.Name, col.Type)
			}
		}
		out, err := rewrite.ColumnType(c)
		if err != nil {
			return nil, err
		}
		ev := exec.NewEvaluator(in, env)
		if bad := ev.Plan(g.Expr); bad != nil {
			return nil, rewrite.Refusal("generated column %s.%s: %s", t.Name, c.Name, errMessage(bad))
		}
		rg.gens = append(rg.gens, g)
		rg.in = append(rg.in, in)
		rg.out = append(rg.out, out)
	}
	return rg, nil
}

// compute returns the value of generated column g (an index into
// rg.gens) for a row: value gives the row's values of the columns it
// reads (NULL for a column the row does not have).
func (rg *rowGenerations) compute(g int, value func(*catalog.Column) onion.Value, env onion.Env) (onion.Value, error) {
	gen := rg.gens[g]
	in := make([]exec.Value, len(gen.Columns))
	for k, col := range gen.Columns {
		var err error
		if in[k], err = exec.FromOnion(rg.in[g][k], value(col), env); err != nil {
			return onion.Value{}, err
		}
	}
	ev := exec.NewEvaluator(rg.in[g], env)
	a, err := ev.Eval(gen.Expr, &exec.Scope{Row: in})
	if err != nil {
		return onion.Value{}, err
	}
	return assignValue(a, rg.out[g], env)
}

// index returns the index in rg.gens of generated column c, -1 if it is
// not one.
func (rg *rowGenerations) index(c *catalog.Column) int {
	if rg == nil {
		return -1
	}
	for i, g := range rg.gens {
		if g.Column.ID == c.ID {
			return i
		}
	}
	return -1
}

// fillHoles computes the values of a statement's generated holes
// (Hole.Generated) from the other values of their rows, vals.
func (rg *rowGenerations) fillHoles(holes []rewrite.Hole, vals []onion.Value, env onion.Env) error {
	for i, h := range holes {
		if !h.Generated {
			continue
		}
		g := rg.index(h.Column)
		if g < 0 {
			return fmt.Errorf("engine: column %s is not a generated column the proxy computes", h.Column.Name)
		}
		value := func(c *catalog.Column) onion.Value {
			for k, o := range holes {
				if o.Row == h.Row && o.Column.ID == c.ID && !o.Generated {
					return vals[k]
				}
			}
			return onion.Null()
		}
		var err error
		if vals[i], err = rg.compute(g, value, env); err != nil {
			return err
		}
	}
	return nil
}

// partialWrites refuses a statement that writes, in rows it does not
// insert (from partialFrom on: an UPDATE, ON CONFLICT DO UPDATE), a
// generated column without all the columns it reads, or one of those
// without the generated column: the proxy would need the row's other
// values (an UPDATE needing them is planned as read-modify-write).
func (rg *rowGenerations) partialWrites(holes []rewrite.Hole, partialFrom int) error {
	if rg == nil {
		return nil
	}
	for _, row := range partialRows(holes, partialFrom) {
		for _, g := range rg.gens {
			_, regen := row[g.Column.ID]
			for _, col := range g.Columns {
				h, set := row[col.ID]
				if regen && (!set || h.Increment != 0) || set && !regen {
					return rewrite.Refusal("this write of %s.%s is not supported: generated column %s reads %s, and the proxy computes it from the row's values", rg.table, col.Name, g.Column.Name, col.Name)
				}
			}
		}
	}
	return nil
}
