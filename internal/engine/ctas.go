package engine

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

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
