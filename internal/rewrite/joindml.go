package rewrite

import (
	"fmt"
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/catalog"
)

// JoinAsSubquery rewrites DELETE ... USING and UPDATE ... FROM on table
// t into the single-table statement they mean, the join moved into a
// subquery that finds the target's rows and locks them,
//
//	DELETE FROM t USING o WHERE t.k = o.k AND o.x = 5
//	->  DELETE FROM t WHERE t.ctid IN (SELECT t.ctid FROM t, o WHERE t.k = o.k AND o.x = 5 FOR UPDATE OF t)
//
// (FOR NO KEY UPDATE for an UPDATE), so that the proxy evaluates the
// subquery first (Subqueries), over the encrypted columns of both
// tables, and the statement names t alone. ok is false for other
// statements. Refused: an UPDATE whose SET reads
// another table's columns (the values would come from the join), and
// RETURNING or WITH alongside the join.
func JoinAsSubquery(st Statement, t *catalog.Table) (out Statement, ok bool, err error) {
	var rel *pg_query.RangeVar
	var joined []*pg_query.Node
	var where *pg_query.Node
	del, upd := st.Tree.Stmt.GetDeleteStmt(), st.Tree.Stmt.GetUpdateStmt()
	switch {
	case del != nil && len(del.UsingClause) > 0:
		if del.WithClause != nil || len(del.ReturningList) > 0 {
			return st, false, Refusal("DELETE ... USING with WITH or RETURNING on table %s with encrypted columns is not supported", t.Name)
		}
		rel, joined, where = del.Relation, del.UsingClause, del.WhereClause
	case upd != nil && len(upd.FromClause) > 0:
		if upd.WithClause != nil || len(upd.ReturningList) > 0 {
			return st, false, Refusal("UPDATE ... FROM with WITH or RETURNING on table %s with encrypted columns is not supported", t.Name)
		}
		rel, joined, where = upd.Relation, upd.FromClause, upd.WhereClause
	default:
		return st, false, nil
	}
	q := rel.Relname
	if rel.Alias != nil {
		q = rel.Alias.Aliasname
	}
	if upd != nil {
		// SET may read the target's columns only.
		var bad string
		for _, n := range upd.TargetList {
			inspect(n.GetResTarget().GetVal().ProtoReflect(), func(m protoreflect.Message) bool {
				cr, isRef := m.Interface().(*pg_query.ColumnRef)
				if !isRef || bad != "" {
					return bad == ""
				}
				f := stringList(cr.Fields)
				switch {
				case len(f) == 1 && t.Column(f[0]) == nil,
					len(f) >= 2 && f[len(f)-2] != q:
					bad = fmt.Sprint(f)
				}
				return true
			})
		}
		if bad != "" {
			return st, false, Refusal("UPDATE ... FROM on table %s with encrypted columns setting a value read from another table is not supported", t.Name)
		}
	}
	// An UPDATE locks its rows FOR NO KEY UPDATE, as PostgreSQL's own
	// UPDATE of non-key columns does, so foreign-key checks (FOR KEY
	// SHARE) get through; one that changes a key takes FOR UPDATE itself
	// on the server. A DELETE takes FOR UPDATE, as PostgreSQL's does.
	strength := pg_query.LockClauseStrength_LCS_FORUPDATE
	if upd != nil {
		strength = pg_query.LockClauseStrength_LCS_FORNOKEYUPDATE
	}
	ctid := &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{pg_query.MakeStrNode(q), pg_query.MakeStrNode("ctid")}}}}
	from := append([]*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: proto.Clone(rel).(*pg_query.RangeVar)}}}, cloneNodes(joined)...)
	sub := &pg_query.SelectStmt{
		TargetList:  []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(proto.Clone(ctid).(*pg_query.Node), -1)},
		FromClause:  from,
		WhereClause: where,
		LockingClause: []*pg_query.Node{{Node: &pg_query.Node_LockingClause{LockingClause: &pg_query.LockingClause{
			Strength: strength, WaitPolicy: pg_query.LockWaitPolicy_LockWaitBlock,
			LockedRels: []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: &pg_query.RangeVar{Relname: q, Inh: true, Relpersistence: "p", Location: -1}}}}}}}},
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg_query.SetOperation_SETOP_NONE,
	}
	in := &pg_query.Node{Node: &pg_query.Node_SubLink{SubLink: &pg_query.SubLink{SubLinkType: pg_query.SubLinkType_ANY_SUBLINK, Testexpr: ctid,
		Subselect: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sub}}, Location: -1}}}
	tree := proto.Clone(st.Tree).(*pg_query.RawStmt)
	if d := tree.Stmt.GetDeleteStmt(); d != nil {
		d.UsingClause, d.WhereClause = nil, in
	} else {
		u := tree.Stmt.GetUpdateStmt()
		u.FromClause, u.WhereClause = nil, in
	}
	sql, err := deparseNode(tree.Stmt, st.version)
	if err != nil {
		return st, false, fmt.Errorf("rewrite: deparsing a join as a subquery: %w", err)
	}
	sts, err := Parse(sql)
	if err != nil || len(sts) != 1 {
		return st, false, fmt.Errorf("rewrite: reparsing a join as a subquery: %v", err)
	}
	return sts[0], true, nil
}

// systemColumn reports whether name is a system column every table has.
func systemColumn(name string) bool {
	return slices.Contains([]string{"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid"}, name)
}
