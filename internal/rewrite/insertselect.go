package rewrite

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// The statements of an INSERT ... SELECT the proxy computes (the engine
// runs the SELECT first, then inserts its rows as VALUES).

// InsertSelect returns the SELECT of INSERT ... SELECT (not VALUES, not
// the UNNEST of arrays the other planners take), or nil.
func InsertSelect(st Statement) *pg_query.SelectStmt {
	sel := st.Tree.GetStmt().GetInsertStmt().GetSelectStmt().GetSelectStmt()
	if sel == nil || len(sel.ValuesLists) > 0 {
		return nil
	}
	return sel
}

// SelectStatement makes sel, part of st, a statement of its own.
func SelectStatement(sel *pg_query.SelectStmt, st Statement) (Statement, error) {
	out := Statement{Kind: "Select", Tree: &pg_query.RawStmt{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: proto.Clone(sel).(*pg_query.SelectStmt)}}}, version: st.version}
	sql, err := out.Deparse()
	if err != nil {
		return Statement{}, fmt.Errorf("rewrite: deparsing the SELECT of an INSERT: %w", err)
	}
	sts, err := Parse(sql)
	if err != nil || len(sts) != 1 {
		return Statement{}, fmt.Errorf("rewrite: reparsing the SELECT of an INSERT: %v", err)
	}
	return sts[0], nil
}

// WithValues returns the INSERT st with lists as its VALUES instead of
// its SELECT (its target list, ON CONFLICT and RETURNING kept).
func WithValues(st Statement, lists []*pg_query.Node) (Statement, error) {
	out := st.Clone()
	out.Tree.Stmt.GetInsertStmt().SelectStmt = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		ValuesLists: lists, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg_query.SetOperation_SETOP_NONE}}}
	sql, err := out.Deparse()
	if err != nil {
		return Statement{}, fmt.Errorf("rewrite: deparsing the VALUES of an INSERT ... SELECT: %w", err)
	}
	sts, err := Parse(sql)
	if err != nil || len(sts) != 1 {
		return Statement{}, fmt.Errorf("rewrite: reparsing the VALUES of an INSERT ... SELECT: %v", err)
	}
	return sts[0], nil
}

// NoRows returns the server INSERT sql with its VALUES replaced by a
// SELECT of no row from the table itself (its columns typed as the
// insert's): it inserts nothing, and still reports its tag and
// RETURNING's columns.
func NoRows(sql string) (string, error) {
	sts, err := Parse(sql)
	if err != nil || len(sts) != 1 || sts[0].Tree.Stmt.GetInsertStmt() == nil {
		return "", fmt.Errorf("rewrite: not an INSERT: %v", err)
	}
	ins := sts[0].Tree.Stmt.GetInsertStmt()
	var targets []*pg_query.Node
	for _, n := range ins.Cols {
		ref := pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode("pgonion_z"), pg_query.MakeStrNode(n.GetResTarget().GetName())}, -1)
		targets = append(targets, pg_query.MakeResTargetNodeWithVal(ref, -1))
	}
	from := proto.Clone(ins.Relation).(*pg_query.RangeVar)
	from.Alias = &pg_query.Alias{Aliasname: "pgonion_z"}
	ins.SelectStmt = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList:  targets,
		FromClause:  []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: from}}},
		WhereClause: typeCast(pg_query.MakeAConstStrNode("f", -1), "bool", false),
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg_query.SetOperation_SETOP_NONE}}}
	return sts[0].Deparse()
}

// NullNode is the NULL constant.
func NullNode() *pg_query.Node { return nullConst() }

// TypeCastNode is n::typ, typ a type's SQL name.
func TypeCastNode(n *pg_query.Node, typ string) *pg_query.Node {
	tn, err := typeNameOf(typ)
	if err != nil {
		return typeCast(n, typ, false)
	}
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: n, TypeName: tn, Location: -1}}}
}

// CreateTableAs is a CREATE TABLE ... AS or SELECT ... INTO the proxy
// computes: it runs Query, creates the table with CreatePrefix and the
// query's columns, and inserts the rows into TargetSQL.
type CreateTableAs struct {
	What         string // "CREATE TABLE AS" or "SELECT INTO", for messages
	Query        *pg_query.SelectStmt
	Relation     *pg_query.RangeVar
	Target       Relation // the new table, its schema resolved
	TargetSQL    string   // its name as SQL
	ColNames     []string // the column names given, if any
	NoData       bool     // WITH NO DATA
	CreatePrefix string   // CREATE [TEMPORARY|UNLOGGED] TABLE name
}

// PlanCreateTableAs reads a CREATE TABLE AS or SELECT INTO; nil for any
// other statement (a materialized view included). Options the proxy
// does not carry over (IF NOT EXISTS, ON COMMIT, TABLESPACE, WITH
// storage parameters) are refused.
func PlanCreateTableAs(st Statement) (*CreateTableAs, error) {
	var into *pg_query.IntoClause
	out := &CreateTableAs{}
	switch {
	case st.Tree.GetStmt().GetCreateTableAsStmt() != nil:
		cta := st.Tree.Stmt.GetCreateTableAsStmt()
		if cta.Objtype != pg_query.ObjectType_OBJECT_TABLE {
			return nil, nil
		}
		if cta.IfNotExists {
			return nil, Refusal("CREATE TABLE IF NOT EXISTS ... AS through the proxy is not supported yet")
		}
		out.What, into = "CREATE TABLE AS", cta.Into
		out.Query = cta.Query.GetSelectStmt()
		if out.Query == nil {
			return nil, Refusal("CREATE TABLE AS of a statement other than SELECT is not supported by the proxy")
		}
		out.NoData = into.SkipData
	case st.Tree.GetStmt().GetSelectStmt().GetIntoClause() != nil:
		sel := proto.Clone(st.Tree.Stmt.GetSelectStmt()).(*pg_query.SelectStmt)
		into, sel.IntoClause = sel.IntoClause, nil
		out.What, out.Query = "SELECT INTO", sel
	default:
		return nil, nil
	}
	if into.OnCommit != pg_query.OnCommitAction_ONCOMMIT_NOOP || into.TableSpaceName != "" || len(into.Options) > 0 || into.AccessMethod != "" {
		return nil, Refusal("%s with ON COMMIT, TABLESPACE, USING or WITH options through the proxy is not supported yet", out.What)
	}
	rv := into.Rel
	out.Relation = rv
	out.Target = Relation{Schema: rv.Schemaname, Name: rv.Relname}
	if out.Target.Schema == "" {
		out.Target.Schema = DefaultSchema
	}
	out.TargetSQL = ident(rv.Relname)
	if rv.Schemaname != "" {
		out.TargetSQL = ident(rv.Schemaname) + "." + out.TargetSQL
	}
	out.ColNames = stringList(into.ColNames)
	prefix := "CREATE TABLE "
	switch rv.Relpersistence {
	case "t":
		prefix = "CREATE TEMPORARY TABLE "
	case "u":
		prefix = "CREATE UNLOGGED TABLE "
	}
	out.CreatePrefix = prefix + out.TargetSQL
	return out, nil
}
