package engine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// CHECK constraints over encrypted columns are evaluated here, on the
// values of each row an INSERT, UPDATE or COPY writes (rewrite/check.go
// says which constraints and why), with split execution's evaluator.

// checkViolation is PostgreSQL's SQLSTATE for a row a CHECK refuses.
const checkViolation = "23514"

// rowChecks are the proxy-enforced checks of one table version.
type rowChecks struct {
	table  string
	checks []*rewrite.Check
	types  [][]onion.Type // of each check's inputs
}

// checksOf returns t's recorded checks, planned (nil when it has none).
func (e *Engine) checksOf(t *catalog.Table) (*rowChecks, error) {
	if len(t.Checks) == 0 {
		return nil, nil
	}
	key := fmt.Sprint(t.ID, t.Version)
	if rc, ok := e.checkCache.Load(key); ok {
		return rc.(*rowChecks), nil
	}
	rc, err := e.planChecks(t)
	if err != nil {
		return nil, err
	}
	e.checkCache.Store(key, rc)
	return rc, nil
}

// planChecks plans t's checks, refusing one the proxy cannot evaluate.
func (e *Engine) planChecks(t *catalog.Table) (*rowChecks, error) {
	rc := &rowChecks{table: t.Name}
	for _, c := range t.Checks {
		pc, err := rewrite.PlanCheck(c, t)
		if err != nil {
			return nil, err
		}
		types := make([]onion.Type, len(pc.Columns))
		for i, col := range pc.Columns {
			if err := e.collationRefusal(t.Name, col); err != nil {
				return nil, err
			}
			if types[i], err = rewrite.ColumnType(col); err != nil {
				return nil, err
			}
			if err := storedExprType(types[i]); err != nil {
				return nil, rewrite.Refusal("CHECK constraint %s of table %s reads column %s of type %s, which the proxy cannot evaluate yet", c.Name, t.Name, col.Name, types[i])
			}
		}
		ev := exec.NewEvaluator(types, onion.Env{})
		if bad := ev.Plan(pc.Expr); bad != nil {
			return nil, rewrite.Refusal("CHECK constraint %s of table %s: %s", c.Name, t.Name, errMessage(bad))
		}
		rc.checks = append(rc.checks, pc)
		rc.types = append(rc.types, types)
	}
	return rc, nil
}

// storedExprType refuses inputs of type t in an expression stored with a
// table (a check, a generated column): those the proxy cannot compute
// with, and timestamptz, whose constants PostgreSQL reads once, in the
// creating session's time zone, where the proxy would read them in each
// writer's.
func storedExprType(t onion.Type) error {
	if t.Base == onion.Timestamptz {
		return rewrite.Refusal("values of type %s in a stored expression are not supported by the proxy yet", t)
	}
	_, err := exec.KindOf(t)
	return err
}

// errMessage is err's message, without its SQLSTATE.
func errMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

// verify checks a row: value returns the row's value of an encrypted
// column and whether the statement writes it. A check none of whose
// columns is written is skipped when partial (an UPDATE leaves them as
// they are); otherwise an unwritten column is NULL.
func (rc *rowChecks) verify(value func(*catalog.Column) (onion.Value, bool), partial bool, env onion.Env) error {
	for i, c := range rc.checks {
		in := make([]exec.Value, len(c.Columns))
		written := false
		for k, col := range c.Columns {
			v, ok := value(col)
			written = written || ok
			if !ok {
				v = onion.Null()
			}
			var err error
			if in[k], err = exec.FromOnion(rc.types[i][k], v, env); err != nil {
				return err
			}
		}
		if partial && !written {
			continue
		}
		ev := exec.NewEvaluator(rc.types[i], env)
		r, err := ev.Eval(c.Expr, &exec.Scope{Row: in})
		if err != nil {
			return err
		}
		if !r.Null && r.Int == 0 {
			pe := &pgconn.PgError{Severity: "ERROR", Code: checkViolation, TableName: rc.table, ConstraintName: c.Name,
				Message: fmt.Sprintf("new row for relation %q violates check constraint %q", rc.table, c.Name)}
			if c.Domain != "" {
				pe.Message = fmt.Sprintf("value for domain %s violates check constraint %q", c.Domain, c.Name)
				pe.TableName = ""
			}
			return pe
		}
	}
	return nil
}

// verifyHoles checks the rows of a statement's holes, whose values are
// vals. A row it inserts that violates a check fails the statement; for
// a row from partialFrom on (UPDATE, ON CONFLICT DO UPDATE), which fails
// only if the server changes a row, it returns the name of the check
// violated, by row (checkedRows).
func (rc *rowChecks) verifyHoles(holes []rewrite.Hole, vals []onion.Value, partialFrom int, env onion.Env) (map[int]string, error) {
	if rc == nil {
		return nil, nil
	}
	rows := map[int]map[catalog.ID]onion.Value{}
	for i, h := range holes {
		if rows[h.Row] == nil {
			rows[h.Row] = map[catalog.ID]onion.Value{}
		}
		rows[h.Row][h.Column.ID] = vals[i]
	}
	var violated map[int]string
	for r, row := range rows {
		value := func(c *catalog.Column) (onion.Value, bool) { v, ok := row[c.ID]; return v, ok }
		err := rc.verify(value, r >= partialFrom, env)
		var pe *pgconn.PgError
		if r >= partialFrom && errors.As(err, &pe) && pe.Code == checkViolation {
			if violated == nil {
				violated = map[int]string{}
			}
			violated[r], err = pe.ConstraintName, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return violated, nil
}

// checkedRows returns the partial rows (from partialFrom on) that write
// a column a check reads: their salts go through pgonion.check_row.
func (rc *rowChecks) checkedRows(holes []rewrite.Hole, partialFrom int) []int {
	if rc == nil {
		return nil
	}
	var out []int
	for _, h := range holes {
		if h.Row < partialFrom || slices.Contains(out, h.Row) {
			continue
		}
		for _, c := range rc.checks {
			if slices.ContainsFunc(c.Columns, func(col *catalog.Column) bool { return col.ID == h.Column.ID }) {
				out = append(out, h.Row)
				break
			}
		}
	}
	return out
}

// partialWrites refuses a statement that writes some but not all of a
// check's columns in a row it does not insert (an UPDATE, ON CONFLICT DO
// UPDATE): the proxy would need the row's other values. An increment of
// a checked column is refused too (its result is computed by the server).
func (rc *rowChecks) partialWrites(holes []rewrite.Hole, partialFrom int) error {
	if rc == nil {
		return nil
	}
	for _, row := range partialRows(holes, partialFrom) {
		for _, c := range rc.checks {
			var set, unset []string
			for _, col := range c.Columns {
				h, ok := row[col.ID]
				if !ok {
					unset = append(unset, col.Name)
					continue
				}
				if h.Increment != 0 {
					return rewrite.Refusal("incrementing encrypted column %s.%s is not supported: CHECK constraint %s reads it, and the server computes the new value over ciphertexts", rc.table, col.Name, c.Name)
				}
				set = append(set, col.Name)
			}
			if len(set) > 0 && len(unset) > 0 {
				return rewrite.Refusal("updating %s.%s without %s is not supported: CHECK constraint %s reads both, and the proxy evaluates it on the values written", rc.table, set[0], unset[0], c.Name)
			}
		}
	}
	return nil
}

// partialRows groups the holes of the rows a statement does not insert
// (from partialFrom on) by row, then by column.
func partialRows(holes []rewrite.Hole, partialFrom int) map[int]map[catalog.ID]rewrite.Hole {
	rows := map[int]map[catalog.ID]rewrite.Hole{}
	for _, h := range holes {
		if h.Row >= partialFrom {
			if rows[h.Row] == nil {
				rows[h.Row] = map[catalog.ID]rewrite.Hole{}
			}
			rows[h.Row][h.Column.ID] = h
		}
	}
	return rows
}

// planDefaults refuses a DEFAULT expression of t's (DefaultExpr) the
// proxy could not compute, when the table is created or altered rather
// than at each INSERT.
func planDefaults(t *catalog.Table, env onion.Env) error {
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.DefaultExpr == nil {
			continue
		}
		e, err := rewrite.DefaultExprOf(c)
		if err != nil {
			return err
		}
		ev := exec.NewEvaluator(nil, env)
		if bad := ev.Plan(e); bad != nil {
			return rewrite.Refusal("DEFAULT of encrypted column %s.%s: %s", t.Name, c.Name, errMessage(bad))
		}
	}
	return nil
}
