package engine

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
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
		if name, ok := subqueryTypeNames[oid]; ok {
			return name, nil
		}
		return "", nil
	}
	from := fmt.Sprintf("type OID %d", oid)
	if name, ok := subqueryTypeNames[oid]; ok {
		from = name
	}
	return "", rewrite.Refusal("INSERT ... SELECT of a %s value into encrypted column %s.%s of type %s is not supported yet: the proxy would read its text where the server casts it; cast it to %s in the SELECT", from, table, c.Name, target, target)
}

// planCreateTableAs plans CREATE TABLE ... AS SELECT and SELECT ... INTO:
// the proxy runs the query first (as for INSERT ... SELECT), creates the
// table as CREATE TABLE with the query's column names and types would
// (the deployment's policy decides which columns are encrypted), and
// inserts the rows; the CREATE and the INSERT go to the server as one
// query string, so they commit or fail together, and the client sees
// the one answer CREATE TABLE AS gives (SELECT n).
func (s *session) planCreateTableAs(st rewrite.Statement, ext *extended) (*stmtPlan, error) {
	cta, err := rewrite.PlanCreateTableAs(st)
	if err != nil || cta == nil {
		return nil, err
	}
	if ext != nil || !s.aheadOK || s.exec == nil {
		return nil, rewrite.Refusal("%s is computed by the proxy, which runs the query first: only in the simple protocol yet, as the first statement of a query string", cta.What)
	}
	res, err := s.readAhead(cta.Query, st, cta.Relation.Relname)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(res.fields))
	mods := make([]string, len(res.fields))
	for i, f := range res.fields {
		names[i] = string(f.Name)
		if i < len(cta.ColNames) {
			names[i] = cta.ColNames[i]
		}
		mods[i] = fmt.Sprintf("format_type(%d, %d)", f.DataTypeOID, f.TypeModifier)
	}
	if len(cta.ColNames) > len(res.fields) {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "too many column names were specified"}
	}
	types := &subqueryRows{}
	if len(mods) > 0 {
		if err := s.exec("SELECT "+strings.Join(mods, ", "), types); err != nil {
			return nil, err
		}
	}
	var cols []string
	for i, n := range names {
		if len(types.rows) != 1 || types.rows[0][i] == nil {
			return nil, fmt.Errorf("engine: the types of the columns of %s", cta.What)
		}
		cols = append(cols, quoteIdent(n)+" "+*types.rows[0][i])
	}
	create, err := rewrite.Parse(cta.CreatePrefix + " (" + strings.Join(cols, ", ") + ")")
	if err != nil || len(create) != 1 {
		return nil, fmt.Errorf("engine: building the CREATE TABLE of %s: %v", cta.What, err)
	}
	cp, err := s.plan(create[0], nil)
	if err != nil {
		return nil, err
	}
	t, err := s.lookup(cta.Target)
	if err != nil {
		return nil, err
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = quoteIdent(n)
	}
	insert, err := rewrite.Parse("INSERT INTO " + cta.TargetSQL + " (" + strings.Join(quoted, ", ") + ") VALUES (NULL)")
	if err != nil || len(insert) != 1 {
		return nil, fmt.Errorf("engine: building the INSERT of %s: %v", cta.What, err)
	}
	if cta.NoData {
		res.rows = nil
	}
	var ip *stmtPlan
	if t == nil {
		// The policy left every column plain: the rows as they are.
		ip = &stmtPlan{}
		if ip.sql, err = plainValues(insert[0], res, types.rows); err != nil {
			return nil, err
		}
	} else if ip, err = s.insertRows(insert[0], t, res); err != nil {
		return nil, err
	}
	sql := create[0].SQL
	var before wire.ResultRewriter = silentResult{}
	if cp != nil {
		sql, before = cp.sql, silentResult{cp.results}
	}
	return &stmtPlan{sql: sql + ";\n" + ip.sql, before: []wire.ResultRewriter{before}, results: selectTag{inner: ip.results, noData: cta.NoData}}, nil
}

// silentResult hides the answer of a statement the proxy added before
// the client's (wire.Silent), running its rewriter's tag for what it does
// (a DDL's catalog reload).
type silentResult struct{ inner wire.ResultRewriter }

func (silentResult) Silent() bool { return true }

func (r silentResult) RowDescription(rd *pgproto3.RowDescription) error {
	if r.inner != nil {
		return r.inner.RowDescription(rd)
	}
	return nil
}

func (r silentResult) DataRow(row *pgproto3.DataRow) error {
	if r.inner != nil {
		return r.inner.DataRow(row)
	}
	return nil
}

// CommandTag implements wire.TagRewriter.
func (r silentResult) CommandTag(tag []byte) []byte {
	if tr, ok := r.inner.(wire.TagRewriter); ok {
		return tr.CommandTag(tag)
	}
	return tag
}

// selectTag reports an INSERT of CREATE TABLE AS's rows as CREATE TABLE
// AS does: SELECT n, or CREATE TABLE AS for WITH NO DATA.
type selectTag struct {
	inner  wire.ResultRewriter
	noData bool
}

func (r selectTag) RowDescription(rd *pgproto3.RowDescription) error {
	if r.inner != nil {
		return r.inner.RowDescription(rd)
	}
	return nil
}

func (r selectTag) DataRow(row *pgproto3.DataRow) error {
	if r.inner != nil {
		return r.inner.DataRow(row)
	}
	return nil
}

// CommandTag implements wire.TagRewriter: INSERT 0 n becomes SELECT n.
func (r selectTag) CommandTag(tag []byte) []byte {
	if tr, ok := r.inner.(wire.TagRewriter); ok {
		tag = tr.CommandTag(tag)
	}
	if r.noData {
		return []byte("CREATE TABLE AS")
	}
	f := strings.Fields(string(tag))
	return []byte("SELECT " + f[len(f)-1])
}

// plainValues is the INSERT st of the rows res into a table of plain
// columns, each value cast to its column's type (types[0]).
func plainValues(st rewrite.Statement, res *subqueryRows, types [][]*string) (string, error) {
	rows := res.rows
	if len(rows) == 0 {
		rows = [][]*string{make([]*string, len(res.fields))} // typed NULLs, none inserted
	}
	lists := make([]*pg_query.Node, len(rows))
	for r, row := range rows {
		vals := make([]*pg_query.Node, len(row))
		for i, v := range row {
			vals[i] = rewrite.NullNode()
			if v != nil {
				vals[i] = rewrite.StringLiteral(*v)
			}
			vals[i] = rewrite.TypeCastNode(vals[i], *types[0][i])
		}
		lists[r] = pg_query.MakeListNode(vals)
	}
	values, err := rewrite.WithValues(st, lists)
	if err != nil {
		return "", err
	}
	if len(res.rows) == 0 {
		return rewrite.NoRows(values.SQL)
	}
	return values.SQL, nil
}

// taggedAs reports its statement under a fixed command tag (running its
// rewriter's for what it does): the last of the statements one client
// statement became answers for it.
type taggedAs struct {
	inner wire.ResultRewriter
	tag   string
}

func (r taggedAs) RowDescription(rd *pgproto3.RowDescription) error {
	if r.inner != nil {
		return r.inner.RowDescription(rd)
	}
	return nil
}

func (r taggedAs) DataRow(row *pgproto3.DataRow) error {
	if r.inner != nil {
		return r.inner.DataRow(row)
	}
	return nil
}

// CommandTag implements wire.TagRewriter.
func (r taggedAs) CommandTag(tag []byte) []byte {
	if tr, ok := r.inner.(wire.TagRewriter); ok {
		tr.CommandTag(tag)
	}
	return []byte(r.tag)
}
