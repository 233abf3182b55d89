package engine

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// maxInsertSelectRows bounds the rows an INSERT ... SELECT or CREATE
// TABLE AS the proxy computes holds in memory (they become one INSERT ...
// VALUES).
const maxInsertSelectRows = 100_000

// planInsertSelect plans INSERT INTO t ... SELECT ... (the rows come from
// a query, over plain or encrypted tables): the proxy runs the SELECT
// ahead of it, in the client's transaction and planned like a client's
// query (it decrypts what it reads), and the statement becomes the
// INSERT ... VALUES of those rows, whose values of encrypted columns the
// proxy encrypts as for any INSERT. Only in the simple protocol: a
// prepared statement would need the rows at each execution.
func (s *session) planInsertSelect(st rewrite.Statement, t *catalog.Table, ext *extended) (*stmtPlan, error) {
	ins := st.Tree.Stmt.GetInsertStmt()
	if ext != nil || !s.aheadOK || s.exec == nil {
		return nil, rewrite.Refusal("INSERT ... SELECT into table %s with encrypted columns is computed by the proxy, which runs the SELECT first: only in the simple protocol yet, as the first statement of a query string; use INSERT ... VALUES", t.Name)
	}
	if ins.WithClause != nil {
		return nil, rewrite.Refusal("WITH ... INSERT ... SELECT into table %s with encrypted columns is not supported; put the WITH in the SELECT", t.Name)
	}
	res, err := s.readAhead(ins.GetSelectStmt().GetSelectStmt(), st, t.Name)
	if err != nil {
		return nil, err
	}
	return s.insertRows(st, t, res)
}

// readAhead runs sel (part of st) through the proxy ahead of the
// client's statement and returns its decrypted rows.
func (s *session) readAhead(sel *pg_query.SelectStmt, st rewrite.Statement, table string) (*subqueryRows, error) {
	query, err := rewrite.SelectStatement(sel, st)
	if err != nil {
		return nil, err
	}
	qp, err := s.plan(query, nil)
	if err != nil {
		return nil, err
	}
	res := &subqueryRows{}
	sql := query.SQL
	if qp != nil {
		sql, res.inner = qp.sql, qp.results
	}
	if err := s.exec(sql, res); err != nil {
		return nil, err
	}
	if res.err != nil {
		return nil, res.err
	}
	if len(res.rows) > maxInsertSelectRows {
		return nil, rewrite.Refusal("writing more than %d rows from a query into table %s with encrypted columns is not supported: the proxy holds them; insert in batches, or with COPY", maxInsertSelectRows, table)
	}
	return res, nil
}

// insertRows plans the INSERT st (its SELECT or VALUES replaced) of the
// rows res into t.
func (s *session) insertRows(st rewrite.Statement, t *catalog.Table, res *subqueryRows) (*stmtPlan, error) {
	ins := st.Tree.Stmt.GetInsertStmt()
	// The target columns, as PlanInsert reads them.
	var targets []*catalog.Column
	for _, n := range ins.Cols {
		targets = append(targets, t.Column(n.GetResTarget().GetName()))
	}
	if len(ins.Cols) == 0 {
		for i := range t.Columns {
			targets = append(targets, &t.Columns[i])
		}
	}
	if len(res.fields) > len(targets) {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "INSERT has more expressions than target columns"}
	}
	casts := make([]string, len(res.fields))
	for i, f := range res.fields {
		var err error
		if casts[i], err = insertSelectCast(f.DataTypeOID, targets[i], t.Name); err != nil {
			return nil, err
		}
	}
	rows := res.rows
	empty := len(rows) == 0
	if empty {
		// One row of NULLs planned, none inserted (NoRows below): the
		// statement still reports INSERT 0 0 and RETURNING's columns.
		rows = [][]*string{make([]*string, len(res.fields))}
	}
	lists := make([]*pg_query.Node, len(rows))
	for r, row := range rows {
		vals := make([]*pg_query.Node, len(row))
		for i, v := range row {
			if v == nil {
				vals[i] = rewrite.NullNode()
				continue
			}
			vals[i] = rewrite.StringLiteral(*v)
			if casts[i] != "" {
				vals[i] = rewrite.TypeCastNode(vals[i], casts[i])
			}
		}
		lists[r] = pg_query.MakeListNode(vals)
	}
	values, err := rewrite.WithValues(st, lists)
	if err != nil {
		return nil, err
	}
	p, err := s.planInsert(values, t, nil)
	if err != nil || !empty || p == nil {
		return p, err
	}
	if p.sql, err = rewrite.NoRows(p.sql); err != nil {
		return nil, err
	}
	return p, nil
}

// insertSelectCast is the cast that makes the text of a value of type
// oid, selected for column c, what PostgreSQL would assign: "" when the
// text is read as c's type directly (same type; integers, strings and
// numerics of other widths, whose input functions check what the
// assignment casts check; an integer into a numeric or double, a numeric
// into a double), else the value's own type for a plain column (the
// server casts it). A value of another type for an encrypted column is
// refused.
func insertSelectCast(oid uint32, c *catalog.Column, table string) (string, error) {
	if c == nil {
		return "", nil // an unknown column: the server reports it
	}
	target, err := rewrite.ColumnType(c)
	if err != nil {
		if c.Policy == catalog.Plain {
			return "", nil // a type the proxy does not compute: its input function
		}
		return "", err
	}
	family := func(o uint32) int {
		switch o {
		case oidInt2, oidInt4, oidInt8:
			return 1
		case oidText, oidVarchar, oidBpchar, oidUnknown:
			return 2
		case 1700:
			return 3
		}
		return 0
	}
	to := target.OID()
	switch {
	case oid == to, family(oid) != 0 && family(oid) == family(to):
		return "", nil
	case family(oid) == 1 && (family(to) == 3 || to == 701), oid == 1700 && to == 701:
		// An integer's text is exact as a numeric or double; a
		// numeric's text reads as a double as the cast does.
		return "", nil
	}
	if c.Policy == catalog.Plain {
		if name, ok := exec.SubqueryTypeNames[oid]; ok {
			return name, nil
		}
		return "", nil
	}
	from := fmt.Sprintf("type OID %d", oid)
	if name, ok := exec.SubqueryTypeNames[oid]; ok {
		from = name
	}
	return "", rewrite.Refusal("INSERT ... SELECT of a %s value into encrypted column %s.%s of type %s is not supported yet: the proxy would read its text where the server casts it; cast it to %s in the SELECT", from, table, c.Name, target, target)
}
