package rewrite

import (
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/ir"
)

// Set operations (UNION, INTERSECT, EXCEPT) whose branches select
// encrypted columns, computed by split execution. The server evaluates
// each branch over the onions, all of them in one statement: the
// branches' rewritten SELECTs side by side in a UNION ALL, each row
// tagged with its branch (input 0) and padded with NULLs where the other
// branches' columns are. The proxy decrypts each row's own columns, and
// computes the set operation over the outputs, each output being its
// branch's column for the row's tag (CASE, so the branches' types unify
// as PostgreSQL unifies them):
//
//   - UNION ALL: every row;
//   - UNION: the rows grouped by every output (NULLs equal, as set
//     operations compare them);
//   - INTERSECT and EXCEPT: grouped likewise, keeping the groups with a
//     row from every branch (INTERSECT) or from the first only (EXCEPT);
//   - INTERSECT ALL and EXCEPT ALL: grouped likewise, each group's row
//     repeated as often as the branch with the fewest copies has it, or
//     the first branch's copies less the others' (AggPlan.Repeat).
//
// The server learns what each branch's own evaluation reveals. A chain
// of one operator (A UNION B UNION C) is read as one operation; other
// shapes and branches the server cannot evaluate alone are refused.

// setOpBranches flattens a left-deep chain of one set operator into its
// branches.
func setOpBranches(sel *pg_query.SelectStmt) ([]*pg_query.SelectStmt, error) {
	if sel.Op == pg_query.SetOperation_SETOP_NONE {
		return []*pg_query.SelectStmt{sel}, nil
	}
	left := sel.Larg
	var out []*pg_query.SelectStmt
	if left.Op != pg_query.SetOperation_SETOP_NONE && len(left.SortClause) == 0 && left.LimitCount == nil && left.LimitOffset == nil && left.WithClause == nil {
		if left.Op != sel.Op || left.All != sel.All {
			return nil, Refusal("set operations of different kinds in one query are not supported over encrypted columns")
		}
		var err error
		if out, err = setOpBranches(left); err != nil {
			return nil, err
		}
	} else {
		out = append(out, left)
	}
	if sel.Rarg.Op != pg_query.SetOperation_SETOP_NONE {
		return nil, Refusal("a set operation nested on the right is not supported over encrypted columns")
	}
	return append(out, sel.Rarg), nil
}

// planSetOp plans st, a set operation, for split execution.
func planSetOp(st Statement, lookup TableLookup) (*AggPlan, error) {
	sel := st.Tree.Stmt.GetSelectStmt()
	if sel.WithClause != nil {
		return nil, Refusal("WITH over a set operation is not supported over encrypted columns")
	}
	branches, err := setOpBranches(sel)
	if err != nil {
		return nil, err
	}
	plans := make([]*QueryPlan, len(branches))
	width := -1
	for i, b := range branches {
		if width >= 0 && len(b.TargetList) != width {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "each " + setOpName(sel) + " query must have the same number of columns"}
		}
		width = len(b.TargetList)
		for _, t := range b.TargetList {
			if cr := t.GetResTarget().GetVal().GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
				return nil, Refusal("* in a branch of a set operation over encrypted columns is not supported: list the columns")
			}
		}
		bst := Statement{SQL: st.SQL, Kind: "Select", Tree: &pg_query.RawStmt{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: b}}}, version: st.version}
		p, err := PlanQuery(bst, lookup)
		if err != nil {
			return nil, err
		}
		if p.PlainResults || len(p.Residuals) > 0 || p.Sort != nil || p.Limit != (ir.LimitValue{}) || p.Offset != (ir.LimitValue{}) || p.Visible != len(p.Columns) || p.Visible != width {
			return nil, Refusal("a branch of this set operation needs the proxy itself (plain outputs only, conditions, order or limits it checks), which is not supported yet")
		}
		plans[i] = p
	}
	inner := &QueryPlan{Columns: []ResultColumn{{Name: "pgonion_branch", Server: 0, Val: -1, Salt: -1, RowSalt: -1, Count: -1, Add: -1}}, ServerColumns: 1}
	offsets := make([]int, len(plans))
	for i, p := range plans {
		offsets[i] = inner.ServerColumns
		inner.ServerColumns += p.ServerColumns
	}
	shift := func(x, by int) int {
		if x < 0 {
			return x
		}
		return x + by
	}
	var wrapped []*pg_query.Node
	for i, p := range plans {
		for _, rc := range p.Columns {
			rc.Server, rc.Val, rc.Salt = shift(rc.Server, offsets[i]), shift(rc.Val, offsets[i]), shift(rc.Salt, offsets[i])
			rc.RowSalt, rc.Count, rc.Add = shift(rc.RowSalt, offsets[i]), shift(rc.Count, offsets[i]), shift(rc.Add, offsets[i])
			inner.Columns = append(inner.Columns, rc)
		}
		inner.Needs = append(inner.Needs, p.Needs...)
		inner.Wants = append(inner.Wants, p.Wants...)
		inner.Holes = append(inner.Holes, p.Holes...)
		// Branch i's row: its tag, then every branch's columns, its own
		// from its SELECT (first in FROM) and the others' NULL, typed as
		// theirs by a LEFT JOIN with an empty copy of them (an untyped
		// NULL would be resolved as text by the first UNION that meets
		// it).
		targets := []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeAConstIntNode(int64(i), -1), -1)}
		var from *pg_query.Node
		order := append([]int{i}, slices.DeleteFunc(slices.Collect(func(yield func(int) bool) {
			for j := range plans {
				yield(j)
			}
		}), func(j int) bool { return j == i })...)
		for _, j := range order {
			alias := "pgonion_b" + strconv.Itoa(j)
			sub := &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: branches[j]}}
			if j != i {
				zero := pg_query.MakeAConstIntNode(0, -1)
				sub = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
					TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(&pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{{Node: &pg_query.Node_AStar{AStar: &pg_query.A_Star{}}}}}}}, -1)},
					FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{Subquery: sub, Alias: &pg_query.Alias{Aliasname: "pgonion_e"}}}}},
					LimitCount: zero, Op: pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_COUNT}}}
			}
			item := &pg_query.Node{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{Subquery: sub, Alias: &pg_query.Alias{Aliasname: alias}}}}
			if from == nil {
				from = item
				continue
			}
			from = &pg_query.Node{Node: &pg_query.Node_JoinExpr{JoinExpr: &pg_query.JoinExpr{Jointype: pg_query.JoinType_JOIN_LEFT, Larg: from, Rarg: item,
				Quals: &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: false}}}}}}}}
		}
		for j := range plans {
			star := &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{pg_query.MakeStrNode("pgonion_b" + strconv.Itoa(j)), {Node: &pg_query.Node_AStar{AStar: &pg_query.A_Star{}}}}}}}
			targets = append(targets, pg_query.MakeResTargetNodeWithVal(star, -1))
		}
		wrapped = append(wrapped, &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
			TargetList: targets, FromClause: []*pg_query.Node{from}, Op: pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT}}})
	}
	server := wrapped[0].GetSelectStmt()
	for _, w := range wrapped[1:] {
		server = &pg_query.SelectStmt{Op: pg_query.SetOperation_SETOP_UNION, All: true, Larg: server, Rarg: w.GetSelectStmt(), LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT}
	}
	inner.Visible = len(inner.Columns)
	inner.st = Statement{SQL: st.SQL, Kind: "Select", Tree: &pg_query.RawStmt{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: server}}}, version: st.version}

	plan := &AggPlan{Inner: inner, Inputs: len(inner.Columns)}
	tag := &ir.Expr{Kind: ir.ExprInput, Input: 0}
	isBranch := func(i int) *ir.Expr {
		c := strconv.Itoa(i)
		return &ir.Expr{Kind: ir.ExprOp, Op: "=", Args: []*ir.Expr{tag, {Kind: ir.ExprConst, Const: &c, ConstType: "integer"}}}
	}
	first := 1
	starts := make([]int, len(plans))
	for i, p := range plans {
		starts[i] = first
		first += len(p.Columns)
	}
	for j := range width {
		e := &ir.Expr{Kind: ir.ExprCase}
		for i := range plans {
			e.Args = append(e.Args, isBranch(i), &ir.Expr{Kind: ir.ExprInput, Input: starts[i] + j})
		}
		plan.Outputs = append(plan.Outputs, ir.AggOutput{Name: outputName(branches[0].TargetList[j].GetResTarget()), Expr: e})
	}
	switch {
	case sel.Op == pg_query.SetOperation_SETOP_UNION && sel.All:
		plan.Ungrouped = true
	default:
		for _, o := range plan.Outputs {
			plan.Group = append(plan.Group, o.Expr)
		}
	}
	count := func(cond *ir.Expr) *ir.Expr {
		one := "1"
		c := &ir.Expr{Kind: ir.ExprCase, Args: []*ir.Expr{cond, {Kind: ir.ExprConst, Const: &one, ConstType: "integer"}}}
		return &ir.Expr{Kind: ir.ExprAgg, Func: "count", Args: []*ir.Expr{c}}
	}
	zero := "0"
	has := func(cond *ir.Expr, want bool) *ir.Expr {
		op := "="
		if want {
			op = ">"
		}
		return &ir.Expr{Kind: ir.ExprOp, Op: op, Args: []*ir.Expr{count(cond), {Kind: ir.ExprConst, Const: &zero, ConstType: "integer"}}}
	}
	switch {
	case sel.All && sel.Op == pg_query.SetOperation_SETOP_INTERSECT:
		// As many copies as the branch with the fewest has.
		plan.Repeat = &ir.Expr{Kind: ir.ExprFunc, Func: "least"}
		for i := range plans {
			plan.Repeat.Args = append(plan.Repeat.Args, count(isBranch(i)))
		}
	case sel.All && sel.Op == pg_query.SetOperation_SETOP_EXCEPT:
		// The first branch's copies less the others'.
		plan.Repeat = count(isBranch(0))
		for i := 1; i < len(plans); i++ {
			plan.Repeat = &ir.Expr{Kind: ir.ExprOp, Op: "-", Args: []*ir.Expr{plan.Repeat, count(isBranch(i))}}
		}
	case sel.Op == pg_query.SetOperation_SETOP_INTERSECT:
		for i := range plans {
			plan.Having = andExpr(plan.Having, has(isBranch(i), true))
		}
	case sel.Op == pg_query.SetOperation_SETOP_EXCEPT:
		plan.Having = has(isBranch(0), true)
		for i := 1; i < len(plans); i++ {
			plan.Having = andExpr(plan.Having, has(isBranch(i), false))
		}
	}
	for _, n := range sel.SortClause {
		sb := n.GetSortBy()
		k := -1
		if p, ok := position(sb.Node); ok {
			k = p - 1
		} else if cr := sb.Node.GetColumnRef(); cr != nil && len(cr.Fields) == 1 {
			for i, o := range plan.Outputs {
				if o.Name == fieldName(cr.Fields[0]) {
					k = i
					break
				}
			}
		}
		if k < 0 || k >= width || sb.SortbyDir == pg_query.SortByDir_SORTBY_USING {
			return nil, Refusal("ORDER BY of a set operation over encrypted columns must name an output column or position")
		}
		plan.Order = append(plan.Order, ir.AggOrder{Expr: plan.Outputs[k].Expr, Desc: desc(sb), NullsFirst: nullsFirst(sb)})
	}
	if err := plan.readLimits(sel); err != nil {
		return nil, err
	}
	return plan, nil
}

// setOpName is the operation's name in PostgreSQL's messages.
func setOpName(sel *pg_query.SelectStmt) string {
	switch sel.Op {
	case pg_query.SetOperation_SETOP_INTERSECT:
		return "INTERSECT"
	case pg_query.SetOperation_SETOP_EXCEPT:
		return "EXCEPT"
	}
	return "UNION"
}
