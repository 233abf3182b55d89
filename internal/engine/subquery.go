package engine

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// subqueriesAhead handles a SELECT that neither the server nor split
// execution can answer as it is (refusal) but whose uncorrelated
// subqueries the proxy can evaluate first (rewrite.Subqueries): it runs
// each of them on the session's server connection, ahead of the
// statement and in the client's transaction, substitutes their results,
// and plans the statement again. ok is false when there is no such
// subquery (the refusal stands).
//
// The server sees the subqueries run as statements of their own, with
// the results the proxy decrypts; what the statement then compares with
// them reaches it encrypted.
func (s *session) subqueriesAhead(orig rewrite.Statement, lookup rewrite.TableLookup, ext *extended, refusal error) (func() (*stmtPlan, error), bool) {
	if !isRefusal(refusal) {
		return nil, false
	}
	work := orig.Clone()
	subs := rewrite.Subqueries(&work, lookup)
	if len(subs) == 0 {
		return nil, false
	}
	return func() (*stmtPlan, error) {
		switch {
		case ext != nil:
			return nil, rewrite.Refusal("%s (its subqueries could be evaluated by the proxy first, which is supported in the simple query protocol only, not yet in the extended protocol)", refusalMessage(refusal))
		case !s.aheadOK || s.exec == nil:
			return nil, rewrite.Refusal("%s (its subqueries could be evaluated by the proxy first, which is supported only for the first statement of a query string)", refusalMessage(refusal))
		}
		for _, sub := range subs {
			res, err := s.evaluateSubquery(sub)
			if err != nil {
				return nil, err
			}
			if err := sub.Substitute(res); err != nil {
				return nil, err
			}
		}
		tables := map[string]*catalog.Table{}
		for _, r := range rewrite.Relations(work) {
			t, err := s.lookup(r)
			if err != nil {
				return nil, err
			}
			if t != nil {
				tables[r.Schema+"."+r.Name] = t
			}
		}
		if work.Kind != "Select" {
			return s.planOnce(work, ext)
		}
		return s.planQuery(work, tables, nil)
	}, true
}

func refusalMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

// evaluateSubquery runs one subquery through the proxy (planned like a
// client's statement: it may itself need split execution or subqueries
// of its own evaluated first) and returns its decrypted rows.
func (s *session) evaluateSubquery(sub rewrite.Subquery) (rewrite.SubqueryResult, error) {
	st := sub.Statement
	p, err := s.plan(st, nil)
	if err != nil && sub.Fallback != nil && isRefusal(err) {
		st = *sub.Fallback
		p, err = s.plan(st, nil)
	}
	if err != nil {
		return rewrite.SubqueryResult{}, err
	}
	c := &subqueryRows{}
	sql := st.SQL
	if p != nil {
		sql, c.inner = p.sql, p.results
	}
	if err := s.exec(sql, c); err != nil {
		return rewrite.SubqueryResult{}, err
	}
	if c.err != nil {
		return rewrite.SubqueryResult{}, c.err
	}
	res := rewrite.SubqueryResult{Rows: c.rows, Secret: c.inner != nil}
	if sub.Kind == rewrite.SubqueryExists {
		return res, nil
	}
	if sub.Kind != rewrite.SubqueryLookup && len(c.fields) != 1 {
		return res, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "subquery must return only one column"}
	}
	for _, f := range c.fields {
		name, ok := subqueryTypeNames[f.DataTypeOID]
		if !ok {
			return res, rewrite.Refusal("a subquery returning values of type OID %d cannot be evaluated by the proxy yet", f.DataTypeOID)
		}
		res.Types = append(res.Types, name)
	}
	return res, nil
}

// subqueryRows collects the rows of a subquery the proxy runs (through
// the rewriter of its plan, when it has one), in text format.
type subqueryRows struct {
	inner  wire.ResultRewriter
	fields []pgproto3.FieldDescription
	rows   [][]*string
	err    error
}

func (c *subqueryRows) RowDescription(rd *pgproto3.RowDescription) error {
	if c.inner != nil {
		if err := c.inner.RowDescription(rd); err != nil {
			return err
		}
	}
	c.fields = append([]pgproto3.FieldDescription(nil), rd.Fields...)
	return nil
}

func (c *subqueryRows) DataRow(row *pgproto3.DataRow) error {
	if c.inner != nil {
		err := c.inner.DataRow(row)
		if err == nil {
			c.add(row)
		} else if !errors.Is(err, wire.ErrSkipRow) {
			return err
		}
		return c.release(false)
	}
	c.add(row)
	return nil
}

// Release takes the rows the inner rewriter held back.
func (c *subqueryRows) Release(atEnd bool) ([]*pgproto3.DataRow, error) {
	return nil, c.release(atEnd)
}

func (c *subqueryRows) release(atEnd bool) error {
	rel, ok := c.inner.(wire.RowReleaser)
	if !ok {
		return nil
	}
	rows, err := rel.Release(atEnd)
	if err != nil {
		return err
	}
	for _, r := range rows {
		c.add(r)
	}
	return nil
}

func (c *subqueryRows) add(row *pgproto3.DataRow) {
	out := make([]*string, len(row.Values))
	for i, v := range row.Values {
		if v != nil {
			s := string(v)
			out[i] = &s
		}
	}
	c.rows = append(c.rows, out)
}

// subqueryTypeNames names the types a subquery's result may have for
// the proxy to substitute it (rewrite.SubqueryResult.Types).
var subqueryTypeNames = map[uint32]string{16: "bool", 20: "int8", 21: "int2", 23: "int4", 25: "text", 1042: "bpchar", 1043: "varchar",
	1082: "date", 1114: "timestamp", 1184: "timestamptz", 1700: "numeric"}

// typeOfName is the type of a lookup's column (rewrite.Lookup), named as
// in subqueryTypeNames.
func typeOfName(name string) (onion.Type, bool) {
	for oid, n := range subqueryTypeNames {
		if n == name {
			return typeOfOID(oid)
		}
	}
	return onion.Type{}, false
}
