package rewrite

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/pgonion/pgonion/internal/pgarray"
)

// UnnestValues rewrites the bulk INSERT of ORMs that bind on the client,
//
//	INSERT INTO t (a, b) SELECT * FROM UNNEST(('{1,2}'::int2[])::integer[], ('{x,y}')::text[])
//
// (Django's bulk_create with psycopg's client-side binding), into the
// INSERT ... VALUES it means, one row per array element, each element a
// constant cast to its column's element type, so that PlanInsert can
// encrypt the values of encrypted columns. ok is false, and st is left
// alone, for any other statement (parameters instead of array constants
// included).
func UnnestValues(st Statement) (out Statement, ok bool, err error) {
	ins := st.Tree.GetStmt().GetInsertStmt()
	sel := ins.GetSelectStmt().GetSelectStmt()
	if ins == nil || sel == nil || ins.WithClause != nil || len(ins.Cols) == 0 || len(sel.ValuesLists) > 0 ||
		sel.WhereClause != nil || len(sel.GroupClause) > 0 || sel.HavingClause != nil || len(sel.SortClause) > 0 ||
		sel.LimitCount != nil || sel.LimitOffset != nil || sel.WithClause != nil || len(sel.DistinctClause) > 0 || sel.Op != pg_query.SetOperation_SETOP_NONE ||
		len(sel.TargetList) != 1 || len(sel.FromClause) != 1 {
		return st, false, nil
	}
	if cr := sel.TargetList[0].GetResTarget().GetVal().GetColumnRef(); cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetAStar() == nil {
		return st, false, nil
	}
	rf := sel.FromClause[0].GetRangeFunction()
	if rf == nil || rf.Lateral || rf.Ordinality || rf.Alias != nil || len(rf.Functions) != 1 {
		return st, false, nil
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 {
		return st, false, nil
	}
	fc := items[0].GetFuncCall()
	if fc == nil || funcName(fc) != "unnest" || len(fc.Args) != len(ins.Cols) || fc.AggFilter != nil || fc.Over != nil {
		return st, false, nil
	}
	var columns [][]*string
	var types []*pg_query.TypeName
	rows := 0
	for _, a := range fc.Args {
		tc := a.GetTypeCast()
		if tc == nil || len(tc.TypeName.GetArrayBounds()) != 1 {
			return st, false, nil
		}
		inner := tc.Arg
		for inner.GetTypeCast() != nil {
			inner = inner.GetTypeCast().Arg
		}
		lit, isString := inner.GetAConst().GetVal().(*pg_query.A_Const_Sval)
		if !isString {
			return st, false, nil
		}
		elems, err := pgarray.ParseText(lit.Sval.Sval)
		if err != nil {
			return st, true, err
		}
		elem := proto.Clone(tc.TypeName).(*pg_query.TypeName)
		elem.ArrayBounds = nil
		columns, types = append(columns, elems), append(types, elem)
		rows = max(rows, len(elems))
	}
	if rows == 0 {
		return st, false, nil
	}
	// UNNEST of several arrays pads the shorter ones with NULLs.
	lists := make([]*pg_query.Node, rows)
	for r := range rows {
		vals := make([]*pg_query.Node, len(columns))
		for c, elems := range columns {
			if r >= len(elems) || elems[r] == nil {
				vals[c] = nullConst()
				continue
			}
			vals[c] = &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
				Arg: pg_query.MakeAConstStrNode(*elems[r], -1), TypeName: proto.Clone(types[c]).(*pg_query.TypeName), Location: -1}}}
		}
		lists[r] = pg_query.MakeListNode(vals)
	}
	out = st.Clone()
	oins := out.Tree.GetStmt().GetInsertStmt()
	oins.SelectStmt = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		ValuesLists: lists, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg_query.SetOperation_SETOP_NONE}}}
	sql, err := out.Deparse()
	if err != nil {
		return st, true, fmt.Errorf("rewrite: deparsing the VALUES of a bulk INSERT: %w", err)
	}
	stmts, err := Parse(sql)
	if err != nil || len(stmts) != 1 {
		return st, true, fmt.Errorf("rewrite: reparsing the VALUES of a bulk INSERT: %v", err)
	}
	return stmts[0], true, nil
}
