package engine

import (
	"fmt"
	"slices"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/schemes/rnd"
)

// checkColumns are the columns t's proxy-enforced checks read.
func checkColumns(rc *rowChecks) []*catalog.Column {
	if rc == nil {
		return nil
	}
	var out []*catalog.Column
	for _, c := range rc.checks {
		for _, col := range c.Columns {
			if !slices.ContainsFunc(out, func(o *catalog.Column) bool { return o.ID == col.ID }) {
				out = append(out, col)
			}
		}
	}
	return out
}

// planUpdateRMW runs the read of an UPDATE the proxy computes
// (rewrite.RMWPlan) ahead of it, in the client's transaction, computes
// each row's new values with split execution's evaluator, checks them
// against the table's checks, encrypts them with a fresh salt per row,
// and plans the UPDATE of the rows read.
func (s *session) planUpdateRMW(p *rewrite.RMWPlan, t *catalog.Table, checks *rowChecks, ext *extended) (*stmtPlan, error) {
	if ext != nil || !s.aheadOK || s.exec == nil {
		return nil, rewrite.Refusal("UPDATE of table %s setting a column to an expression over encrypted columns is computed by the proxy, which reads the rows first: only in the simple protocol yet, as the first statement of a query string", t.Name)
	}
	env, err := s.params.get()
	if err != nil {
		return nil, err
	}
	in := make([]onion.Type, len(p.Inputs))
	for i, c := range p.Inputs {
		if err := collationRefusal(t.Name, c); err != nil {
			return nil, err
		}
		if in[i], err = rewrite.ColumnType(c); err == nil {
			_, err = kindOf(in[i])
		}
		if err != nil {
			return nil, rewrite.Refusal("UPDATE of table %s reads column %s of type %s, which the proxy cannot compute with yet", t.Name, c.Name, c.Type)
		}
	}
	ev := &evaluator{env: env, in: in, consts: map[*rewrite.Expr]aval{}}
	out := make([]onion.Type, len(p.Sets))
	xs := make([]*encrypted, len(p.Sets))
	for i, set := range p.Sets {
		if bad := ev.plan(set.Expr); bad != nil {
			return nil, rewrite.Refusal("SET %s = <expression> on table %s: %s", set.Column.Name, t.Name, errMessage(bad))
		}
		if out[i], err = rewrite.ColumnType(set.Column); err != nil {
			return nil, rewrite.Refusal("UPDATE of column %s.%s of type %s by the proxy is not supported yet", t.Name, set.Column.Name, set.Column.Type)
		}
		if xs[i], err = s.e.encrypted(t.Name, set.Column); err != nil {
			return nil, err
		}
	}
	// The read, planned like a client's SELECT (it may peel, in this
	// transaction: then this UPDATE is planned again at the new layers).
	s.mu.Lock()
	gen := s.txGen
	s.mu.Unlock()
	rp, err := s.plan(p.Read, nil)
	if err != nil {
		return nil, err
	}
	rows := &subqueryRows{}
	sql := p.Read.SQL
	if rp != nil {
		sql, rows.inner = rp.sql, rp.results
	}
	if err := s.exec(sql, rows); err != nil {
		return nil, err
	}
	if rows.err != nil {
		return nil, rows.err
	}
	s.mu.Lock()
	replan := s.txGen != gen
	s.mu.Unlock()
	if replan {
		return nil, errPeeledInTx
	}
	if err := s.holdWrites(t); err != nil {
		return nil, err
	}
	out2 := make([]rewrite.RMWRow, len(rows.rows))
	for r, row := range rows.rows {
		if len(row) != 2+len(in) || row[0] == nil || row[1] == nil {
			return nil, fmt.Errorf("engine: the read of an UPDATE of %s returned %d columns", t.Name, len(row))
		}
		vals := make([]aval, len(in))
		for i, v := range row[2:] {
			vals[i] = nullOf(in[i])
			if v == nil {
				continue
			}
			ov, err := in[i].ParseText([]byte(*v), env)
			if err != nil {
				return nil, err
			}
			if vals[i], err = fromOnion(in[i], ov, env); err != nil {
				return nil, err
			}
		}
		next := make([]onion.Value, len(p.Sets))
		for i, set := range p.Sets {
			a, err := ev.eval(set.Expr, &scope{row: vals})
			if err != nil {
				return nil, err
			}
			if next[i], err = assignValue(a, out[i], env); err != nil {
				return nil, err
			}
		}
		if checks != nil {
			value := func(c *catalog.Column) (onion.Value, bool) {
				for i, set := range p.Sets {
					if set.Column.ID == c.ID {
						return next[i], true
					}
				}
				for i, ic := range p.Inputs {
					if ic.ID == c.ID {
						v, err := vals[i].toOnion(env)
						return v, err == nil
					}
				}
				return onion.Null(), false
			}
			if err := checks.verify(value, false, env); err != nil {
				return nil, err
			}
		}
		rr := rewrite.RMWRow{CTID: *row[0], XMin: *row[1], Cells: make([]rewrite.Cells, len(p.Sets))}
		for i, set := range p.Sets {
			salt := rnd.NewSalt()
			c, err := xs[i].encrypt(next[i], salt)
			if err != nil {
				return nil, fmt.Errorf("failed to encrypt a value of %s.%s: %w", t.Name, set.Column.Name, err)
			}
			rr.Cells[i] = literalCells(c, xs[i].oc)
			rr.Cells[i][rewrite.SaltSuffix] = rewrite.ByteaLiteral(salt)
		}
		out2[r] = rr
	}
	sql, err = p.Render(out2)
	if err != nil {
		return nil, err
	}
	return &stmtPlan{sql: sql}, nil
}

// assignValue converts a computed value to a column's type as an
// assignment does: through its text form when the types differ (numeric
// to numeric(p,s) rounds, too long a varchar fails with 22001).
func assignValue(a aval, t onion.Type, env onion.Env) (onion.Value, error) {
	if a.null {
		return onion.Null(), nil
	}
	if a.t == t {
		return a.toOnion(env)
	}
	return t.ParseText([]byte(a.text(env)), env)
}
