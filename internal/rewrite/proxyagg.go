package rewrite

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgarray"
)

// This file plans split execution (Monomi's term) for grouped SELECTs the
// server cannot compute over the onions: aggregates of expressions over
// encrypted columns (sum(price * (1 - discount))), SUM without an Add
// onion, ORDER BY on a computed aggregate, LIKE together with GROUP BY.
// The server does what it can, the proxy the rest:
//
//   - the server runs the query's FROM and WHERE (joins and predicates over
//     the onions, LIKE prefilters) and returns the columns the rest of the
//     query reads, as a plain SELECT of them (Inner);
//   - the proxy decrypts each row, checks residual conditions, and
//     computes the select list, GROUP BY, HAVING, ORDER BY, LIMIT and
//     OFFSET itself (AggPlan's expressions).
//
// The server learns no more than the FROM and WHERE reveal; the price is
// that every qualifying row crosses the wire and is decrypted.

// AggPlan is a grouped SELECT computed by the proxy over the rows of
// Inner.
type AggPlan struct {
	// Inner is the server's part: one visible column per input.
	Inner *QueryPlan
	// Inputs is the number of input columns (the visible columns of
	// Inner).
	Inputs  int
	Outputs []ir.AggOutput
	// Where is the part of the WHERE clause the proxy checks on each
	// input row before grouping (conditions the server cannot evaluate
	// over the onions, such as substring(c, 1, 2) IN (...)); nil when the
	// server evaluates all of it.
	Where  *ir.Expr
	Group  []*ir.Expr
	Having *ir.Expr
	// Repeat, when set, is how many copies of each group's row that
	// passes Having are result rows (an integer; 0 or less: none), for
	// INTERSECT ALL and EXCEPT ALL.
	Repeat *ir.Expr
	Order  []ir.AggOrder
	// DistinctOn is how many of the first Order keys are DISTINCT ON's
	// expressions (ungrouped plans): of the rows sorted by Order, the
	// first of each run of rows equal on them is kept, before Offset and
	// Limit.
	DistinctOn int
	// Limit and Offset are constants or parameters (or none); a
	// parameter is bigint, and BindParams makes it a constant.
	Limit, Offset ir.LimitValue
	// Ungrouped is a query without aggregates or GROUP BY: each input
	// row that passes Where is a result row.
	Ungrouped bool
	// JoinResidual, when set, is the part of a LEFT JOIN's ON clause the
	// proxy checks (see outerjoin.go): on each input row where it is not
	// true, the inputs Nullable (the right side's columns) are set to
	// NULL before Where, grouping and aggregates.
	JoinResidual *ir.Expr
	Nullable     []int
	// RowIDs are the inputs that identify a row of a table (its tableoid
	// and ctid, see groupmerge.go): only grouped on, they are compared
	// as text.
	RowIDs []int
	// Source, when set, is a derived table the proxy computes first (a
	// grouped subquery in FROM): its result rows are the inputs, and
	// Inner is Source's (the server's part of the innermost plan).
	Source *AggPlan
}

// readLimits reads sel's LIMIT and OFFSET, which the proxy applies:
// constants or parameters (made constants by BindParams).
func (p *AggPlan) readLimits(sel *pg_query.SelectStmt) error {
	for _, lv := range []struct {
		n   *pg_query.Node
		out *ir.LimitValue
	}{{sel.LimitCount, &p.Limit}, {sel.LimitOffset, &p.Offset}} {
		var err error
		if *lv.out, err = limitValue(lv.n); err != nil {
			return err
		}
	}
	return nil
}

// distinctAsGroups reads SELECT DISTINCT without aggregates or GROUP BY
// as the same SELECT grouped by every output (GROUP BY 1, 2, ...), which
// means the same, the rule that ORDER BY reads only outputs included;
// over window functions, as DISTINCT ON every output.
func distinctAsGroups(sel *pg_query.SelectStmt) error {
	if !plainDistinct(sel.DistinctClause) || len(sel.GroupClause) > 0 || sel.HavingClause != nil {
		return nil
	}
	for _, t := range sel.TargetList {
		if containsAggregate(t) {
			return nil
		}
	}
	if err := checkDistinctOrder(sel); err != nil {
		return err
	}
	var positions []*pg_query.Node
	for i := range sel.TargetList {
		positions = append(positions, pg_query.MakeAConstIntNode(int64(i+1), -1))
	}
	if slices.ContainsFunc(sel.TargetList, containsWindowCall) {
		// Window functions are computed before DISTINCT, over the rows
		// the grouping would merge: DISTINCT ON every output instead,
		// after them.
		sel.DistinctClause = positions
		return nil
	}
	sel.GroupClause = append(sel.GroupClause, positions...)
	sel.DistinctClause = nil
	return nil
}

// checkDistinctOrder fails as PostgreSQL does when a SELECT DISTINCT is
// ordered by a column that is not one of its outputs (by name or alias).
func checkDistinctOrder(sel *pg_query.SelectStmt) error {
	if !plainDistinct(sel.DistinctClause) {
		return nil
	}
	for _, sb := range sel.SortClause {
		cr := sb.GetSortBy().GetNode().GetColumnRef()
		if cr == nil {
			// An expression must be one of the outputs; columns are
			// compared by name, as d.x and x are alike once resolved.
			key := sortKeyShape(sb.GetSortBy().GetNode())
			if !slices.ContainsFunc(sel.TargetList, func(t *pg_query.Node) bool {
				return proto.Equal(sortKeyShape(t.GetResTarget().GetVal()), key)
			}) && !isOutputPosition(sb.GetSortBy().GetNode()) {
				return &pgconn.PgError{Severity: "ERROR", Code: "42P10", Message: "for SELECT DISTINCT, ORDER BY expressions must appear in select list"}
			}
			continue
		}
		name := fieldName(cr.Fields[len(cr.Fields)-1])
		found := false
		for _, t := range sel.TargetList {
			rt := t.GetResTarget()
			if tcr := rt.Val.GetColumnRef(); len(cr.Fields) == 1 && rt.Name == name || tcr != nil && fieldName(tcr.Fields[len(tcr.Fields)-1]) == name {
				found = true
				break
			}
		}
		if name == "" || !found {
			return &pgconn.PgError{Severity: "ERROR", Code: "42P10", Message: "for SELECT DISTINCT, ORDER BY expressions must appear in select list"}
		}
	}
	return nil
}

// sortKeyShape is a copy of n without source locations and with each
// column reference reduced to its column's name: the shape by which an
// ORDER BY expression of a SELECT DISTINCT is matched with its outputs.
func sortKeyShape(n *pg_query.Node) *pg_query.Node {
	if n == nil {
		return nil
	}
	out := proto.Clone(n).(*pg_query.Node)
	inspect(out.ProtoReflect(), func(m protoreflect.Message) bool {
		if cr, ok := m.Interface().(*pg_query.ColumnRef); ok && len(cr.Fields) > 1 {
			cr.Fields = cr.Fields[len(cr.Fields)-1:]
		}
		if fd := m.Descriptor().Fields().ByName("location"); fd != nil {
			m.Clear(fd)
		}
		return true
	})
	return out
}

// isOutputPosition reports whether an ORDER BY item is an output's
// position (ORDER BY 2).
func isOutputPosition(n *pg_query.Node) bool {
	_, ok := n.GetAConst().GetVal().(*pg_query.A_Const_Ival)
	return ok
}

// textArrayType is the ConstType of a cast to text[].
const textArrayType = "text[]"

// CastTarget is the target type of cast e (ExprFunc "cast").
func CastTarget(e *ir.Expr) (onion.Type, error) {
	if e.ConstType == textArrayType {
		return onion.ArrayOf(onion.Type{Base: onion.Text})
	}
	return parseType(e.ConstType)
}

// PlanAggregate plans st (a SELECT, untouched by PlanQuery) for
// split execution, or refuses it.
//
// A query over one derived table is planned first as one server query
// over it; if that is refused, the proxy computes the derived table too,
// first (AggPlan.Source).
func PlanAggregate(st Statement, lookup TableLookup) (*AggPlan, error) {
	orig := st.Clone()
	p, err := planAggregate(st, lookup, false)
	if IsRefusal(err) {
		p2, err2 := planAggregate(orig, lookup, true)
		if err2 == nil || !IsRefusal(err2) {
			return p2, err2 // answered, or an error of the query itself
		}
	}
	return p, err
}

// planAggregate is PlanAggregate, with the derived table computed by the
// proxy when nested is set.
func planAggregate(st Statement, lookup TableLookup, nested bool) (*AggPlan, error) {
	sel := st.Tree.Stmt.GetSelectStmt()
	if sel != nil && sel.Op != pg_query.SetOperation_SETOP_NONE && !nested {
		return planSetOp(st, lookup)
	}
	if sel == nil || sel.Op != pg_query.SetOperation_SETOP_NONE || len(sel.ValuesLists) > 0 {
		return nil, Refusal("only a single SELECT or a set operation of SELECTs can be computed by the proxy")
	}
	if err := distinctAsGroups(sel); err != nil {
		return nil, err
	}
	distinctOnItems := distinctOn(sel.DistinctClause)
	if distinctOnItems != nil {
		sel.DistinctClause = nil // read after the select list
	}
	if len(sel.DistinctClause) > 0 || len(sel.WindowClause) > 0 || sel.LimitOption == pg_query.LimitOption_LIMIT_OPTION_WITH_TIES || sel.IntoClause != nil || len(sel.LockingClause) > 0 {
		return nil, Refusal("DISTINCT ON, windows, WITH TIES and locking clauses are not supported in a query the proxy computes")
	}
	inlineCTEs(sel)
	if err := mergeDerived(sel); err != nil {
		return nil, err
	}
	rowIDs, _, err := mergeGrouped(sel, lookup)
	if err != nil {
		return nil, err
	}
	resolveGroupAliases(sel, lookup)
	b := &aggBuilder{inputs: map[string]int{}, st: st, sel: sel, lookup: lookup}
	if nested {
		if err := b.derivedSource(sel, lookup); err != nil {
			return nil, err
		}
		if b.source == nil {
			return nil, Refusal("no derived table to compute first")
		}
	}
	var jr *joinResidual
	if !nested {
		moveInnerJoinQuals(sel, st.version, lookup)
		var err error
		if jr, err = splitJoinResidual(sel, st.version, lookup); err != nil {
			return nil, err
		}
		if jr != nil {
			if err := jr.checkWhere(sel.WhereClause, lookup); err != nil {
				return nil, err
			}
		}
	}
	grouped := len(sel.GroupClause) > 0 || sel.HavingClause != nil
	// The conditions of the WHERE the server cannot evaluate are checked
	// by the proxy.
	var serverWhere []*pg_query.Node
	for _, c := range conjuncts(sel.WhereClause) {
		if b.source == nil && serverEvaluates(c, sel, st.version, lookup) {
			serverWhere = append(serverWhere, c)
			continue
		}
		e, err := b.expr(c)
		if err != nil {
			return nil, err
		}
		if hasAgg(e) {
			return nil, Refusal("aggregate functions are not allowed in WHERE")
		}
		if ir.HasWindow(e) {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42P20", Message: "window functions are not allowed in WHERE"}
		}
		b.plan.Where = andExpr(b.plan.Where, e)
	}
	sel.WhereClause = andNodes(serverWhere)
	if b.source != nil {
		// * over the derived table computed first: its columns.
		sel.TargetList = b.expandSourceStars(sel.TargetList)
	}
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			return nil, Refusal("* in a query the proxy computes is not supported: list the columns")
		}
		e, err := b.expr(rt.Val)
		if err != nil {
			return nil, err
		}
		if hasAgg(e) {
			grouped = true
		}
		b.plan.Outputs = append(b.plan.Outputs, ir.AggOutput{Name: outputName(rt), Expr: e})
	}
	for _, n := range sel.GroupClause {
		e, err := b.outputRef(n, false)
		if err != nil {
			return nil, err
		}
		b.plan.Group = append(b.plan.Group, e)
	}
	for _, cr := range rowIDs {
		if e, err := b.expr(&pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: cr}}); err == nil && e.Kind == ir.ExprInput {
			b.plan.RowIDs = append(b.plan.RowIDs, e.Input)
		}
	}
	if sel.HavingClause != nil {
		e, err := b.expr(sel.HavingClause)
		if err != nil {
			return nil, err
		}
		b.plan.Having = e
	}
	for _, n := range sel.SortClause {
		sb := n.GetSortBy()
		if sb.SortbyDir == pg_query.SortByDir_SORTBY_USING {
			return nil, Refusal("ORDER BY ... USING in a query the proxy computes is not supported")
		}
		e, err := b.outputRef(sb.Node, true)
		if err != nil {
			return nil, err
		}
		b.plan.Order = append(b.plan.Order, ir.AggOrder{Expr: e, Desc: desc(sb), NullsFirst: nullsFirst(sb)})
		grouped = grouped || hasAgg(e)
	}
	b.plan.Ungrouped = !grouped
	if distinctOnItems != nil {
		if grouped {
			return nil, Refusal("DISTINCT ON over a grouped query is not supported in a query the proxy computes")
		}
		// As PostgreSQL: the leading ORDER BY items are the DISTINCT ON
		// expressions, in any order; those ORDER BY does not list are
		// sorted on after them.
		var on []*ir.Expr
		for _, n := range distinctOnItems {
			e, err := b.outputRef(n, true)
			if err != nil {
				return nil, err
			}
			on = append(on, e)
		}
		matched := make([]bool, len(on))
		for i := 0; i < len(on) && i < len(b.plan.Order); i++ {
			k := slices.IndexFunc(on, func(e *ir.Expr) bool { return sameExpr(e, b.plan.Order[i].Expr) })
			if k < 0 {
				return nil, &pgconn.PgError{Severity: "ERROR", Code: "42P10", Message: "SELECT DISTINCT ON expressions must match initial ORDER BY expressions"}
			}
			matched[k] = true
		}
		if len(b.plan.Order) < len(on) {
			for k, e := range on {
				if !matched[k] {
					b.plan.Order = append(b.plan.Order, ir.AggOrder{Expr: e})
				}
			}
		}
		b.plan.DistinctOn = len(on)
	}
	if grouped && b.plan.Having != nil && ir.HasWindow(b.plan.Having) {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "42P20", Message: "window functions are not allowed in HAVING"}
	}
	if err := b.plan.readLimits(sel); err != nil {
		return nil, err
	}
	// Every input is checked for grouping: outside aggregates only GROUP
	// BY expressions may be read (as PostgreSQL requires).
	check := []*ir.Expr{b.plan.Having}
	for _, o := range b.plan.Outputs {
		check = append(check, o.Expr)
	}
	for _, o := range b.plan.Order {
		check = append(check, o.Expr)
	}
	for _, e := range check {
		if b.plan.Ungrouped {
			break
		}
		if err := b.checkGrouped(e); err != nil {
			return nil, err
		}
	}
	if jr != nil {
		if err := b.checkJoinResidual(jr, lookup); err != nil {
			return nil, err
		}
	}
	if b.source != nil {
		b.plan.Source, b.plan.Inner, b.plan.Inputs = b.source, b.source.Inner, len(b.source.Outputs)
		for _, g := range b.plan.Group {
			if g.Kind != ir.ExprInput {
				continue
			}
			if err := refuseLossyOutput(b.source, g.Input); err != nil {
				return nil, err
			}
		}
		return &b.plan, nil
	}
	inner := &pg_query.SelectStmt{TargetList: b.targets, FromClause: sel.FromClause, WhereClause: sel.WhereClause, WithClause: sel.WithClause,
		Op: pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT}
	if len(b.targets) == 0 {
		inner.TargetList = []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeAConstIntNode(1, -1), -1)}
	}
	innerSt := Statement{SQL: st.SQL, Kind: "Select", Tree: &pg_query.RawStmt{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: inner}}}, version: st.version}
	if b.plan.Inner, err = PlanQuery(innerSt, lookup); err != nil {
		return nil, err
	}
	b.plan.Inputs = len(b.targets)
	// As on the server: grouping on a column whose equal values print
	// differently (1.0, 1.00) would show an arbitrary one.
	for _, g := range b.plan.Group {
		if g.Kind != ir.ExprInput {
			continue
		}
		if err := refuseLossyInput(&b.plan, g.Input); err != nil {
			return nil, err
		}
	}
	return &b.plan, nil
}

// refuseLossyInput refuses grouping on input i of p when it is an
// encrypted column whose equal values print differently (1.0, 1.00): the
// group would show one of them where PostgreSQL's plan might show
// another. Double precision, real and interval are grouped: their only
// such values are -0 and 0, or intervals such as 1 day and 24 hours, and
// the proxy shows the group's first value, as PostgreSQL does (which one
// comes first is its plan's, either way).
func refuseLossyInput(p *AggPlan, i int) error {
	if p.Source != nil {
		return refuseLossyOutput(p.Source, i)
	}
	if p.Inner.PlainResults {
		return nil
	}
	if rc := p.Inner.Columns[i]; rc.Column != nil {
		if t, err := ColumnType(rc.Column); err == nil && (t.Base == onion.Float8 || t.Base == onion.Float4 || t.Base == onion.Interval) {
			return nil
		}
		return refuseLossy(&encCol{table: rc.Table, col: rc.Column}, "GROUP BY")
	}
	return nil
}

// refuseLossyOutput is refuseLossyInput for output i of p: an output
// that is an input passed through is that input.
func refuseLossyOutput(p *AggPlan, i int) error {
	if e := p.Outputs[i].Expr; e.Kind == ir.ExprInput {
		return refuseLossyInput(p, e.Input)
	}
	return nil
}

// derivedSource recognizes a query over one derived table that does not
// merge into it (grouped, say: FROM (SELECT k, count(*) AS c FROM t
// GROUP BY k) s): the proxy computes the derived table first, by split
// execution, and its rows are the query's inputs. Nothing is done for
// other queries.
func (b *aggBuilder) derivedSource(sel *pg_query.SelectStmt, lookup TableLookup) error {
	if len(sel.FromClause) != 1 {
		return nil
	}
	rs := sel.FromClause[0].GetRangeSubselect()
	if rs == nil {
		return nil
	}
	sub := rs.Subquery.GetSelectStmt()
	if rs.Lateral || rs.Alias == nil || sub == nil {
		return Refusal("this derived table is not supported in a query the proxy computes")
	}
	if sel.WithClause != nil && sub.WithClause == nil {
		sub.WithClause = sel.WithClause // the CTEs it may read
	}
	subSt := b.st
	subSt.Tree = &pg_query.RawStmt{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sub}}}
	src, err := PlanAggregate(subSt, lookup)
	if err != nil {
		return err
	}
	if len(rs.Alias.Colnames) > len(src.Outputs) {
		return Refusal("derived table %s has %d columns available but %d columns specified", rs.Alias.Aliasname, len(src.Outputs), len(rs.Alias.Colnames))
	}
	b.source, b.sourceAlias, b.sourceNames = src, rs.Alias.Aliasname, make([]string, len(src.Outputs))
	for i, o := range src.Outputs {
		b.sourceNames[i] = o.Name
		if i < len(rs.Alias.Colnames) {
			b.sourceNames[i] = fieldName(rs.Alias.Colnames[i])
		}
	}
	return nil
}

// expandSourceStars writes * and alias.* over the derived table computed first
// as its columns; other items stay.
func (b *aggBuilder) expandSourceStars(list []*pg_query.Node) []*pg_query.Node {
	var out []*pg_query.Node
	for _, t := range list {
		cr := t.GetResTarget().GetVal().GetColumnRef()
		if cr == nil || cr.Fields[len(cr.Fields)-1].GetAStar() == nil ||
			len(cr.Fields) == 2 && fieldName(cr.Fields[0]) != b.sourceAlias || len(cr.Fields) > 2 {
			out = append(out, t)
			continue
		}
		for _, name := range b.sourceNames {
			ref := pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(b.sourceAlias), pg_query.MakeStrNode(name)}, -1)
			out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(name, ref, -1))
		}
	}
	return out
}

// sourceInput resolves a column reference to an output of the derived
// table the proxy computes first.
func (b *aggBuilder) sourceInput(cr *pg_query.ColumnRef) (int, error) {
	f := stringList(cr.Fields)
	if len(f) == 2 && f[0] != b.sourceAlias || len(f) > 2 {
		return 0, Refusal("column reference %s is not supported in a query over a derived table the proxy computes", strings.Join(f, "."))
	}
	found := -1
	for i, n := range b.sourceNames {
		if n != f[len(f)-1] {
			continue
		}
		if found >= 0 {
			return 0, &pgconn.PgError{Severity: "ERROR", Code: "42702", Message: fmt.Sprintf("column reference %q is ambiguous", n)}
		}
		found = i
	}
	if found < 0 {
		return 0, &pgconn.PgError{Severity: "ERROR", Code: "42703", Message: fmt.Sprintf("column %s does not exist", strings.Join(f, "."))}
	}
	return found, nil
}

// aggBuilder turns the client's expressions into Exprs over inputs.
type aggBuilder struct {
	plan    AggPlan
	inputs  map[string]int // deparsed column reference -> input
	targets []*pg_query.Node
	inAgg   bool
	// inWindow is set while a window function's arguments are read.
	inWindow bool
	st       Statement // for its lookups
	// sel and lookup are the statement's SELECT and its tables, for the
	// primary keys of grouped tables (funcdep.go).
	sel    *pg_query.SelectStmt
	lookup TableLookup

	// source is the derived table computed first (derivedSource), whose
	// outputs, named sourceNames under sourceAlias, are the inputs.
	source      *AggPlan
	sourceAlias string
	sourceNames []string
}

// input returns the input of a column reference, adding it.
func (b *aggBuilder) input(cr *pg_query.ColumnRef) int {
	key := ""
	for _, f := range cr.Fields {
		key += fieldName(f) + "."
	}
	if i, ok := b.inputs[key]; ok {
		return i
	}
	i := len(b.targets)
	b.inputs[key] = i
	b.targets = append(b.targets, pg_query.MakeResTargetNodeWithVal(&pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: proto.Clone(cr).(*pg_query.ColumnRef)}}, -1))
	return i
}

// outputRef is a GROUP BY or ORDER BY item: an output position or name
// (ORDER BY prefers output names; GROUP BY input columns), else an
// expression.
func (b *aggBuilder) outputRef(n *pg_query.Node, preferOutput bool) (*ir.Expr, error) {
	if k, ok := position(n); ok {
		if k < 1 || k > len(b.plan.Outputs) {
			return nil, Refusal("position %d is not in the select list", k)
		}
		return b.plan.Outputs[k-1].Expr, nil
	}
	if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) == 1 && preferOutput {
		for _, o := range b.plan.Outputs {
			if o.Name == fieldName(cr.Fields[0]) {
				return o.Expr, nil
			}
		}
	}
	return b.expr(n)
}

func (b *aggBuilder) expr(n *pg_query.Node) (*ir.Expr, error) {
	if n == nil {
		return nil, nil
	}
	switch x := n.Node.(type) {
	case *pg_query.Node_ColumnRef:
		if x.ColumnRef.Fields[len(x.ColumnRef.Fields)-1].GetAStar() != nil {
			return nil, Refusal("* in an expression the proxy computes is not supported")
		}
		if b.source != nil {
			i, err := b.sourceInput(x.ColumnRef)
			return &ir.Expr{Kind: ir.ExprInput, Input: i}, err
		}
		return &ir.Expr{Kind: ir.ExprInput, Input: b.input(x.ColumnRef)}, nil
	case *pg_query.Node_AConst:
		return constExpr(n), nil
	case *pg_query.Node_ParamRef:
		return &ir.Expr{Kind: ir.ExprParam, Input: int(x.ParamRef.Number)}, nil
	case *pg_query.Node_TypeCast:
		if x.TypeCast.Arg.GetAConst() != nil {
			e := constExpr(x.TypeCast.Arg)
			e.ConstType = constType(n)
			if len(x.TypeCast.TypeName.GetTypmods()) > 0 && e.Const != nil {
				// A cast with a length changes the value first.
				v, err := applyLengthCast(x.TypeCast.TypeName, *e.Const)
				if err != nil {
					return nil, Refusal("a %s constant is not supported in a query the proxy computes (%v)", deparseType(x.TypeCast.TypeName), err)
				}
				e.Const = &v
			}
			return e, nil
		}
		// CAST(x AS t): the function "cast", the target type in
		// ConstType (CastTarget reads it).
		tn := x.TypeCast.TypeName
		if len(tn.GetArrayBounds()) > 0 {
			if names := typeNames(tn); len(tn.GetArrayBounds()) == 1 && len(typmods(tn)) == 0 && len(names) > 0 && (names[len(names)-1] == "text" || names[len(names)-1] == "varchar") {
				// text[]: the operand of the jsonb operators #>, ?| and ?&.
				return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: "cast", ConstType: textArrayType}, x.TypeCast.Arg)
			}
			return nil, Refusal("casts to array types other than text[] are not supported in a query the proxy computes")
		}
		t, err := onion.TypeFromNames(typeNames(tn), typmods(tn))
		if err != nil {
			return nil, Refusal("cast to %s is not supported in a query the proxy computes", deparseType(tn))
		}
		return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: "cast", ConstType: t.String()}, x.TypeCast.Arg)
	case *pg_query.Node_CoalesceExpr:
		return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: "coalesce"}, x.CoalesceExpr.Args...)
	case *pg_query.Node_MinMaxExpr:
		f := "greatest"
		if x.MinMaxExpr.Op == pg_query.MinMaxOp_IS_LEAST {
			f = "least"
		}
		return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: f}, x.MinMaxExpr.Args...)
	case *pg_query.Node_BoolExpr:
		e := &ir.Expr{Kind: ir.ExprBool, Op: map[pg_query.BoolExprType]string{pg_query.BoolExprType_AND_EXPR: "AND", pg_query.BoolExprType_OR_EXPR: "OR", pg_query.BoolExprType_NOT_EXPR: "NOT"}[x.BoolExpr.Boolop]}
		return b.withArgs(e, x.BoolExpr.Args...)
	case *pg_query.Node_NullTest:
		op := "IS NULL"
		if x.NullTest.Nulltesttype == pg_query.NullTestType_IS_NOT_NULL {
			op = "IS NOT NULL"
		}
		return b.withArgs(&ir.Expr{Kind: ir.ExprNullTest, Op: op}, x.NullTest.Arg)
	case *pg_query.Node_AExpr:
		return b.aexpr(x.AExpr)
	case *pg_query.Node_CaseExpr:
		ce := x.CaseExpr
		e := &ir.Expr{Kind: ir.ExprCase}
		for _, w := range ce.Args {
			cw := w.GetCaseWhen()
			cond := cw.Expr
			if ce.Arg != nil {
				// CASE x WHEN v: x = v.
				cond = &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{Kind: pg_query.A_Expr_Kind_AEXPR_OP, Name: []*pg_query.Node{pg_query.MakeStrNode("=")}, Lexpr: ce.Arg, Rexpr: cw.Expr}}}
			}
			if _, err := b.withArgs(e, cond, cw.Result); err != nil {
				return nil, err
			}
		}
		var err error
		e.Else, err = b.expr(ce.Defresult)
		return e, err
	case *pg_query.Node_FuncCall:
		return b.funcCall(x.FuncCall)
	case *pg_query.Node_SqlvalueFunction:
		return sqlValueFunction(x.SqlvalueFunction)
	case *pg_query.Node_BooleanTest:
		return b.expr(booleanTestAsCase(x.BooleanTest))
	case *pg_query.Node_SubLink:
		return b.sublinkInput(n)
	}
	return nil, Refusal("%s is not supported in a query the proxy computes", nodeDescription(n))
}

// booleanTestAsCase reads x IS [NOT] TRUE, FALSE, UNKNOWN as what it
// means: CASE WHEN x THEN true ELSE false END (WHEN NOT x for FALSE),
// negated for NOT; x IS [NOT] NULL for UNKNOWN.
func booleanTestAsCase(bt *pg_query.BooleanTest) *pg_query.Node {
	arg := bt.Arg
	negate := false
	switch bt.Booltesttype {
	case pg_query.BoolTestType_IS_UNKNOWN, pg_query.BoolTestType_IS_NOT_UNKNOWN:
		t := pg_query.NullTestType_IS_NULL
		if bt.Booltesttype == pg_query.BoolTestType_IS_NOT_UNKNOWN {
			t = pg_query.NullTestType_IS_NOT_NULL
		}
		return &pg_query.Node{Node: &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{Arg: arg, Nulltesttype: t, Location: -1}}}
	case pg_query.BoolTestType_IS_FALSE, pg_query.BoolTestType_IS_NOT_FALSE:
		arg = pg_query.MakeBoolExprNode(pg_query.BoolExprType_NOT_EXPR, []*pg_query.Node{arg}, -1)
		negate = bt.Booltesttype == pg_query.BoolTestType_IS_NOT_FALSE
	default:
		negate = bt.Booltesttype == pg_query.BoolTestType_IS_NOT_TRUE
	}
	boolean := func(v bool) *pg_query.Node {
		return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: v}}, Location: -1}}}
	}
	when := &pg_query.Node{Node: &pg_query.Node_CaseWhen{CaseWhen: &pg_query.CaseWhen{Expr: arg, Result: boolean(!negate), Location: -1}}}
	return &pg_query.Node{Node: &pg_query.Node_CaseExpr{CaseExpr: &pg_query.CaseExpr{Args: []*pg_query.Node{when}, Defresult: boolean(negate), Location: -1}}}
}

// nodeDescription names an expression's kind for a refusal.
func nodeDescription(n *pg_query.Node) string {
	switch n.Node.(type) {
	case *pg_query.Node_SubLink:
		return "a subquery"
	case *pg_query.Node_RowExpr:
		return "a row constructor"
	case *pg_query.Node_AArrayExpr:
		return "an ARRAY constructor"
	case *pg_query.Node_AIndirection:
		return "a subscript or field selection"
	case *pg_query.Node_CollateClause:
		return "COLLATE"
	case *pg_query.Node_BooleanTest:
		return "IS [NOT] TRUE/FALSE/UNKNOWN"
	case *pg_query.Node_XmlExpr, *pg_query.Node_XmlSerialize:
		return "an XML expression"
	case *pg_query.Node_GroupingFunc:
		return "GROUPING"
	}
	name := strings.TrimPrefix(fmt.Sprintf("%T", n.Node), "*pg_query.Node_")
	return "this expression (" + name + ")"
}

func (b *aggBuilder) withArgs(e *ir.Expr, args ...*pg_query.Node) (*ir.Expr, error) {
	for _, a := range args {
		x, err := b.expr(a)
		if err != nil {
			return nil, err
		}
		e.Args = append(e.Args, x)
	}
	return e, nil
}

func (b *aggBuilder) aexpr(a *pg_query.A_Expr) (*ir.Expr, error) {
	names := stringList(a.Name)
	op := ""
	if len(names) == 1 {
		op = names[0]
	}
	switch a.Kind {
	case pg_query.A_Expr_Kind_AEXPR_OP:
		switch op {
		case "+", "-", "*", "/", "||", "=", "<>", "<", "<=", ">", ">=", "#", "&", "|":
		case "~~", "!~~", "~~*", "!~~*":
			// LIKE as pg_get_constraintdef and ruleutils print it.
			return b.like(a)
		case "->", "->>", "@>", "<@", "?", "~", "!~", "~*", "!~*", "<<", ">>":
			// jsonb operators, regular expressions and bit shifts:
			// functions of the scalar library named by their symbols.
			if a.Lexpr != nil {
				return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: op}, a.Lexpr, a.Rexpr)
			}
		case "#>", "#>>", "?|", "?&":
			// Their text[] operand: one argument per element.
			if a.Lexpr != nil {
				elems, err := textArrayElements(a.Rexpr, op)
				if err != nil {
					return nil, err
				}
				return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: op}, append([]*pg_query.Node{a.Lexpr}, elems...)...)
			}
		case "%":
			// int4mod, numeric_mod: the function mod.
			if a.Lexpr != nil {
				return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: "mod"}, a.Lexpr, a.Rexpr)
			}
			fallthrough
		case "^":
			// dpow, numeric_power: the function power.
			if a.Lexpr != nil {
				return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: "power"}, a.Lexpr, a.Rexpr)
			}
			fallthrough
		default:
			return nil, Refusal("operator %s is not supported in a query the proxy computes", op)
		}
		if a.Lexpr == nil {
			return b.withArgs(&ir.Expr{Kind: ir.ExprOp, Op: "neg"}, a.Rexpr)
		}
		return b.withArgs(&ir.Expr{Kind: ir.ExprOp, Op: op}, a.Lexpr, a.Rexpr)
	case pg_query.A_Expr_Kind_AEXPR_NULLIF:
		return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: "nullif"}, a.Lexpr, a.Rexpr)
	case pg_query.A_Expr_Kind_AEXPR_IN:
		list := a.Rexpr.GetList()
		if list == nil {
			return nil, Refusal("IN with a subquery is not supported in a query the proxy computes")
		}
		in := "="
		if op == "<>" {
			in = "<>"
		}
		return b.withArgs(&ir.Expr{Kind: ir.ExprIn, Op: in}, append([]*pg_query.Node{a.Lexpr}, list.Items...)...)
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		list := a.Rexpr.GetList()
		lo, err := b.withArgs(&ir.Expr{Kind: ir.ExprOp, Op: ">="}, a.Lexpr, list.Items[0])
		if err != nil {
			return nil, err
		}
		hi, err := b.withArgs(&ir.Expr{Kind: ir.ExprOp, Op: "<="}, a.Lexpr, list.Items[1])
		if err != nil {
			return nil, err
		}
		e := &ir.Expr{Kind: ir.ExprBool, Op: "AND", Args: []*ir.Expr{lo, hi}}
		if a.Kind == pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN {
			e = &ir.Expr{Kind: ir.ExprBool, Op: "NOT", Args: []*ir.Expr{e}}
		}
		return e, nil
	case pg_query.A_Expr_Kind_AEXPR_LIKE, pg_query.A_Expr_Kind_AEXPR_ILIKE:
		return b.like(a)
	case pg_query.A_Expr_Kind_AEXPR_OP_ANY, pg_query.A_Expr_Kind_AEXPR_OP_ALL:
		return b.quantified(a, op)
	}
	return nil, Refusal("this operator is not supported in a query the proxy computes")
}

// quantified reads x op ANY (array) and x op ALL (array), which
// PostgreSQL defines as the OR (AND) of x op e over the elements, NULL
// as OR and AND make it, false (true) for no element. ARRAY[...] is
// written as that OR (AND); an array value (a parameter, a literal) is
// the function "op any" ("op all") of the scalar library, which reads
// its text form with x's type.
func (b *aggBuilder) quantified(a *pg_query.A_Expr, op string) (*ir.Expr, error) {
	switch op {
	case "=", "<>", "<", "<=", ">", ">=":
	default:
		return nil, Refusal("operator %s with ANY or ALL is not supported in a query the proxy computes", op)
	}
	join, quant := "OR", "any"
	if a.Kind == pg_query.A_Expr_Kind_AEXPR_OP_ALL {
		join, quant = "AND", "all"
	}
	if ae := a.Rexpr.GetAArrayExpr(); ae != nil && len(ae.Elements) > 0 {
		if err := checkArrayLiterals(ae); err != nil {
			return nil, err
		}
		// ARRAY['a', NULL] of untyped literals only is text[], not an
		// array of x's type (unlike an IN list): its elements are text.
		untyped := true
		for _, el := range ae.Elements {
			if k := el.GetAConst(); k == nil || !k.Isnull && k.GetSval() == nil {
				untyped = false
			}
		}
		e := &ir.Expr{Kind: ir.ExprBool, Op: join}
		for _, el := range ae.Elements {
			if el.GetAArrayExpr() != nil {
				return nil, Refusal("a multidimensional array with ANY or ALL is not supported in a query the proxy computes")
			}
			if untyped {
				el = &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: el, TypeName: typeName("text"), Location: -1}}}
			}
			c, err := b.withArgs(&ir.Expr{Kind: ir.ExprOp, Op: op}, a.Lexpr, el)
			if err != nil {
				return nil, err
			}
			e.Args = append(e.Args, c)
		}
		if len(e.Args) == 1 {
			return e.Args[0], nil
		}
		return e, nil
	}
	arr := a.Rexpr
	if tc := arr.GetTypeCast(); tc != nil && len(tc.TypeName.GetArrayBounds()) > 0 && (tc.Arg.GetParamRef() != nil || tc.Arg.GetAConst() != nil) {
		arr = tc.Arg // its text, read with the type of x
	}
	if arr.GetParamRef() == nil && arr.GetAConst() == nil {
		return nil, Refusal("ANY or ALL of this array is not supported in a query the proxy computes: only ARRAY[...], a literal or a parameter")
	}
	return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: op + " " + quant}, a.Lexpr, arr)
}

// textArrayElements are the elements of the text[] operand of op:
// ARRAY[...], or an array constant (possibly cast to text[]); other forms
// (a parameter, an expression) are refused.
func textArrayElements(n *pg_query.Node, op string) ([]*pg_query.Node, error) {
	if tc := n.GetTypeCast(); tc != nil {
		names := stringList(tc.TypeName.GetNames())
		if len(tc.TypeName.ArrayBounds) != 1 || len(names) == 0 || (names[len(names)-1] != "text" && names[len(names)-1] != "varchar") {
			return nil, Refusal("operator %s with an operand of type %s is not supported in a query the proxy computes", op, deparseType(tc.TypeName))
		}
		n = tc.Arg
	}
	if ae := n.GetAArrayExpr(); ae != nil {
		return ae.Elements, nil
	}
	if c := n.GetAConst(); c != nil && c.GetSval() != nil {
		texts, err := pgarray.ParseText(c.GetSval().Sval)
		if err != nil {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "22P02", Message: fmt.Sprintf("malformed array literal: %q", c.GetSval().Sval), Detail: err.Error()}
		}
		out := make([]*pg_query.Node, len(texts))
		for i, t := range texts {
			out[i] = nullConst()
			if t != nil {
				out[i] = pg_query.MakeAConstStrNode(*t, -1)
			}
		}
		return out, nil
	}
	if n.GetParamRef() != nil {
		// One text[] argument, as PostgreSQL types the parameter.
		return []*pg_query.Node{typeCast(n, "text", true)}, nil
	}
	return nil, Refusal("operator %s with an array expression is not supported in a query the proxy computes: write the array as ARRAY[...], a constant or a parameter", op)
}

// like reads LIKE, ILIKE and their operators ~~, ~~* and negations.
func (b *aggBuilder) like(a *pg_query.A_Expr) (*ir.Expr, error) {
	l, pat, err := readLike(a)
	if err != nil {
		return nil, err
	}
	if pat.GetAConst() == nil {
		// A pattern computed per row (UPPER($1), col || '%'):
		// Args[1].
		return b.withArgs(&ir.Expr{Kind: ir.ExprLike, Like: l}, a.Lexpr, pat)
	}
	l.Const = constExpr(pat).Const
	return b.withArgs(&ir.Expr{Kind: ir.ExprLike, Like: l}, a.Lexpr)
}

func (b *aggBuilder) funcCall(fc *pg_query.FuncCall) (*ir.Expr, error) {
	if l, keys, ok := b.st.lookupOf(fc); ok {
		return b.withArgs(&ir.Expr{Kind: ir.ExprLookup, Lookup: l}, keys...)
	}
	name := funcName(fc)
	if fc.Over != nil {
		return b.window(fc, name)
	}
	if fc.AggFilter != nil && fc.Over == nil && len(fc.AggOrder) == 0 && slices.Contains(proxyAggregates, name) {
		fc = filterAsCase(fc)
	}
	if fc.Over != nil || fc.AggFilter != nil || len(fc.AggOrder) > 0 {
		return nil, Refusal("%s with OVER, FILTER or ORDER BY is not supported in a query the proxy computes", name)
	}
	if slices.Contains(proxyAggregates, name) {
		if b.inAgg {
			return nil, Refusal("nested aggregates are not supported")
		}
		e := &ir.Expr{Kind: ir.ExprAgg, Func: name, Distinct: fc.AggDistinct, Star: fc.AggStar}
		if fc.AggStar {
			return e, nil
		}
		if len(fc.Args) != 1 {
			return nil, Refusal("%s takes one argument", name)
		}
		b.inAgg = true
		defer func() { b.inAgg = false }()
		return b.withArgs(e, fc.Args[0])
	}
	switch name {
	case "extract", "date_part":
		if len(fc.Args) != 2 || fc.Args[0].GetAConst() == nil {
			return nil, Refusal("%s needs a constant field", name)
		}
		return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: name}, fc.Args...) // date_part is double precision
	case "substring", "substr":
		if len(fc.Args) < 2 || len(fc.Args) > 3 {
			return nil, Refusal("substring with %d arguments is not supported", len(fc.Args))
		}
		return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: "substring"}, fc.Args...)
	}
	if isAggregate(fc) {
		return nil, Refusal("aggregate %s is not supported in a query the proxy computes", name)
	}
	if fc.AggStar || fc.AggDistinct || fc.FuncVariadic || len(stringList(fc.Funcname)) > 2 {
		return nil, Refusal("%s with *, DISTINCT or VARIADIC is not supported in a query the proxy computes", name)
	}
	// Any other function: the engine computes it if its scalar library
	// has it (with these argument types), and refuses it by name
	// otherwise.
	return b.withArgs(&ir.Expr{Kind: ir.ExprFunc, Func: name}, fc.Args...)
}

// proxyAggregates are the aggregates split execution computes (ExprAgg):
// stddev and variance are stddev_samp and var_samp.
var proxyAggregates = []string{"sum", "avg", "count", "min", "max",
	"stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop"}

// window reads a window function over an OVER clause of partitions,
// order and frame: the ranking and distribution functions, lag, lead,
// first_value, last_value, nth_value, ntile, and the aggregates sum, avg,
// count, min and max.
func (b *aggBuilder) window(fc *pg_query.FuncCall, name string) (*ir.Expr, error) {
	over := fc.Over
	if over.Name != "" || over.Refname != "" {
		return nil, Refusal("named windows (WINDOW w AS ...) are not supported in a query the proxy computes")
	}
	if fc.AggFilter != nil || len(fc.AggOrder) > 0 || fc.AggDistinct || fc.FuncVariadic {
		return nil, Refusal("%s with FILTER, ORDER BY, DISTINCT or VARIADIC over a window is not supported in a query the proxy computes", name)
	}
	if b.inAgg || b.inWindow {
		return nil, Refusal("window functions inside aggregates or other window functions are not allowed")
	}
	e := &ir.Expr{Kind: ir.ExprWindow, Func: name, Star: fc.AggStar, Window: &ir.Window{}}
	switch name {
	case "row_number", "rank", "dense_rank":
		if len(fc.Args) > 0 || fc.AggStar {
			return nil, Refusal("%s takes no arguments", name)
		}
	case "percent_rank", "cume_dist":
		if len(fc.Args) > 0 || fc.AggStar {
			return nil, Refusal("%s takes no arguments", name)
		}
	case "sum", "avg", "count", "min", "max":
		if !fc.AggStar && len(fc.Args) != 1 {
			return nil, Refusal("%s takes one argument", name)
		}
	case "lag", "lead":
		if len(fc.Args) < 1 || len(fc.Args) > 3 {
			return nil, Refusal("%s takes one to three arguments", name)
		}
	case "first_value", "last_value", "ntile":
		if len(fc.Args) != 1 {
			return nil, Refusal("%s takes one argument", name)
		}
	case "nth_value":
		if len(fc.Args) != 2 {
			return nil, Refusal("%s takes two arguments", name)
		}
	default:
		return nil, Refusal("window function %s is not supported in a query the proxy computes", name)
	}
	b.inWindow = true
	defer func() { b.inWindow = false }()
	if _, err := b.withArgs(e, fc.Args...); err != nil {
		return nil, err
	}
	frame, err := b.frame(over)
	if err != nil {
		return nil, err
	}
	e.Window.Frame = frame
	for _, n := range over.PartitionClause {
		p, err := b.expr(n)
		if err != nil {
			return nil, err
		}
		e.Window.Partition = append(e.Window.Partition, p)
	}
	for _, n := range over.OrderClause {
		sb := n.GetSortBy()
		if sb.SortbyDir == pg_query.SortByDir_SORTBY_USING {
			return nil, Refusal("ORDER BY ... USING in a window is not supported in a query the proxy computes")
		}
		o, err := b.expr(sb.Node)
		if err != nil {
			return nil, err
		}
		e.Window.Order = append(e.Window.Order, ir.AggOrder{Expr: o, Desc: desc(sb), NullsFirst: nullsFirst(sb)})
	}
	if frame != nil && frame.Mode == ir.FrameGroups && len(e.Window.Order) == 0 {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "42P20", Message: "GROUPS mode requires an ORDER BY clause"}
	}
	if frame != nil && frame.Mode == ir.FrameRange && (frame.Start.Offset != nil || frame.End.Offset != nil) && len(e.Window.Order) != 1 {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "42P20", Message: "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column"}
	}
	return e, nil
}

// FRAMEOPTION_* of PostgreSQL's parsenodes.h: the frame clause as the
// parser leaves it in WindowDef.FrameOptions.
const (
	frameNonDefault         = 0x00001
	frameRange              = 0x00002
	frameRows               = 0x00004
	frameGroups             = 0x00008
	frameStartUnbounded     = 0x00020
	frameEndUnbounded       = 0x00100
	frameStartCurrent       = 0x00200
	frameEndCurrent         = 0x00400
	frameStartPreceding     = 0x00800
	frameEndPreceding       = 0x01000
	frameStartFollowing     = 0x02000
	frameEndFollowing       = 0x04000
	frameExcludeCurrentRow  = 0x08000
	frameExcludeGroup       = 0x10000
	frameExcludeTies        = 0x20000
	frameDefaultOptionsMask = frameNonDefault
)

// frame reads an OVER clause's frame: nil for the default one. RANGE
// with an offset (a distance in the ORDER BY key's values) is refused;
// the parser has rejected impossible bounds already.
func (b *aggBuilder) frame(over *pg_query.WindowDef) (*ir.Frame, error) {
	opts := over.FrameOptions
	if opts&frameDefaultOptionsMask == 0 {
		return nil, nil
	}
	f := &ir.Frame{Mode: ir.FrameRange}
	switch {
	case opts&frameRows != 0:
		f.Mode = ir.FrameRows
	case opts&frameGroups != 0:
		f.Mode = ir.FrameGroups
	}
	mode := f.Mode.String()
	bound := func(unbounded, current, preceding, following int32, off *pg_query.Node, deflt ir.BoundKind) (ir.FrameBound, error) {
		switch {
		case opts&unbounded != 0:
			return ir.FrameBound{Kind: deflt}, nil
		case opts&current != 0:
			return ir.FrameBound{Kind: ir.CurrentRow}, nil
		case opts&(preceding|following) != 0:
			kind := ir.OffsetPreceding
			if opts&following != 0 {
				kind = ir.OffsetFollowing
			}
			x, err := b.expr(off)
			if err != nil {
				return ir.FrameBound{}, err
			}
			if len(exprInputs(x)) > 0 {
				return ir.FrameBound{}, &pgconn.PgError{Severity: "ERROR", Code: "42P10", Message: fmt.Sprintf("argument of %s must not contain variables", mode)}
			}
			return ir.FrameBound{Kind: kind, Offset: x}, nil
		}
		return ir.FrameBound{Kind: deflt}, nil
	}
	var err error
	if f.Start, err = bound(frameStartUnbounded, frameStartCurrent, frameStartPreceding, frameStartFollowing, over.StartOffset, ir.UnboundedPreceding); err != nil {
		return nil, err
	}
	if f.End, err = bound(frameEndUnbounded, frameEndCurrent, frameEndPreceding, frameEndFollowing, over.EndOffset, ir.UnboundedFollowing); err != nil {
		return nil, err
	}
	for bit, x := range map[int32]ir.FrameExclusion{frameExcludeCurrentRow: ir.ExcludeCurrentRow, frameExcludeGroup: ir.ExcludeGroup, frameExcludeTies: ir.ExcludeTies} {
		if opts&bit != 0 {
			f.Exclude = x // the parser allows one
		}
	}
	return f, nil
}

// exprInputs returns the input columns e reads.
func exprInputs(e *ir.Expr) []int {
	var out []int
	ir.WalkExpr(e, func(x *ir.Expr) {
		if x.Kind == ir.ExprInput {
			out = append(out, x.Input)
		}
	})
	return out
}

// filterAsCase reads agg(x) FILTER (WHERE c) as agg(CASE WHEN c THEN x
// END), and count(*) FILTER (WHERE c) as count(CASE WHEN c THEN 1 END):
// sum, avg, count, min and max skip NULLs, so both mean the same, and x
// is computed only where c holds, as with FILTER.
func filterAsCase(fc *pg_query.FuncCall) *pg_query.FuncCall {
	out := proto.Clone(fc).(*pg_query.FuncCall)
	arg := pg_query.MakeAConstIntNode(1, -1)
	if !fc.AggStar && len(fc.Args) == 1 {
		arg = out.Args[0]
	}
	when := &pg_query.Node{Node: &pg_query.Node_CaseWhen{CaseWhen: &pg_query.CaseWhen{Expr: out.AggFilter, Result: arg, Location: -1}}}
	out.Args = []*pg_query.Node{{Node: &pg_query.Node_CaseExpr{CaseExpr: &pg_query.CaseExpr{Args: []*pg_query.Node{when}, Location: -1}}}}
	out.AggFilter, out.AggStar = nil, false
	return out
}

// sqlValueFunction is CURRENT_DATE, CURRENT_TIMESTAMP(p), LOCALTIME ...:
// the function of that name, the precision its argument.
func sqlValueFunction(f *pg_query.SQLValueFunction) (*ir.Expr, error) {
	name, precise := map[pg_query.SQLValueFunctionOp]string{
		pg_query.SQLValueFunctionOp_SVFOP_CURRENT_DATE:        "current_date",
		pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME:        "current_time",
		pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP:   "current_timestamp",
		pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME:           "localtime",
		pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP:      "localtimestamp",
		pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N:      "current_time",
		pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N: "current_timestamp",
		pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME_N:         "localtime",
		pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:    "localtimestamp",
	}[f.Op], false
	switch f.Op {
	case pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N, pg_query.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N,
		pg_query.SQLValueFunctionOp_SVFOP_LOCALTIME_N, pg_query.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:
		precise = true
	}
	if name == "" {
		return nil, Refusal("%s is not supported in a query the proxy computes", strings.TrimPrefix(f.Op.String(), "SVFOP_"))
	}
	e := &ir.Expr{Kind: ir.ExprFunc, Func: name}
	if precise {
		e.Args = []*ir.Expr{constExpr(pg_query.MakeAConstIntNode(int64(f.Typmod), -1))}
	}
	return e, nil
}

// checkGrouped refuses inputs read outside aggregates that are not GROUP
// BY expressions.
func (b *aggBuilder) checkGrouped(e *ir.Expr) error {
	if e == nil || e.Kind == ir.ExprAgg || e.Kind == ir.ExprConst {
		return nil
	}
	for _, g := range b.plan.Group {
		if sameExpr(e, g) {
			return nil
		}
	}
	if e.Kind == ir.ExprInput {
		return b.checkDependent(e.Input)
	}
	subs := append(append([]*ir.Expr{}, e.Args...), e.Else)
	if w := e.Window; w != nil {
		// A window over groups reads their keys and aggregates.
		subs = append(subs, w.Partition...)
		for _, o := range w.Order {
			subs = append(subs, o.Expr)
		}
	}
	for _, a := range subs {
		if err := b.checkGrouped(a); err != nil {
			return err
		}
	}
	return nil
}

// sameExpr reports whether two Exprs are the same expression.
func sameExpr(a, b *ir.Expr) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind || a.Input != b.Input || a.Op != b.Op || a.Func != b.Func || a.Distinct != b.Distinct || a.Star != b.Star ||
		(a.Const == nil) != (b.Const == nil) || a.Const != nil && *a.Const != *b.Const || a.ConstType != b.ConstType || len(a.Args) != len(b.Args) || !sameExpr(a.Else, b.Else) {
		return false
	}
	for i := range a.Args {
		if !sameExpr(a.Args[i], b.Args[i]) {
			return false
		}
	}
	return true
}

func hasAgg(e *ir.Expr) bool {
	if e == nil {
		return false
	}
	if e.Kind == ir.ExprAgg {
		return true
	}
	for _, a := range e.Args {
		if hasAgg(a) {
			return true
		}
	}
	return hasAgg(e.Else)
}

// constExpr is the Expr of an A_Const (or a negated number).
func constExpr(n *pg_query.Node) *ir.Expr {
	e := &ir.Expr{Kind: ir.ExprConst, ConstType: constType(n)}
	c := n.GetAConst()
	if c == nil || c.Isnull {
		return e
	}
	var s string
	switch v := c.Val.(type) {
	case *pg_query.A_Const_Ival:
		s = strconv.FormatInt(int64(v.Ival.Ival), 10)
	case *pg_query.A_Const_Fval:
		s = v.Fval.Fval
	case *pg_query.A_Const_Sval:
		s = v.Sval.Sval
	case *pg_query.A_Const_Boolval:
		s = strconv.FormatBool(v.Boolval.Boolval)
	case *pg_query.A_Const_Bsval:
		s = v.Bsval.Bsval
	}
	e.Const = &s
	return e
}

// inlineCTEs turns each CTE of sel that its FROM reads once, and that
// nothing else reads, into a derived table there (which mergeDerived may
// then merge): WITH s AS (q) SELECT ... FROM s is SELECT ... FROM (q) s.
func inlineCTEs(sel *pg_query.SelectStmt) {
	w := sel.WithClause
	if w == nil || w.Recursive {
		return
	}
	refs := map[string]int{}
	inspect(sel.ProtoReflect(), func(m protoreflect.Message) bool {
		if rv, ok := m.Interface().(*pg_query.RangeVar); ok && rv.Schemaname == "" {
			refs[rv.Relname]++
			return false
		}
		return true
	})
	var kept []*pg_query.Node
	for _, n := range w.Ctes {
		cte := n.GetCommonTableExpr()
		inlined := false
		for i, f := range sel.FromClause {
			rv := f.GetRangeVar()
			if rv == nil || rv.Schemaname != "" || rv.Relname != cte.Ctename || refs[cte.Ctename] != 1 || cte.Ctematerialized == pg_query.CTEMaterialize_CTEMaterializeAlways {
				continue
			}
			alias := &pg_query.Alias{Aliasname: rv.Relname, Colnames: cte.Aliascolnames}
			if rv.Alias != nil {
				alias.Aliasname = rv.Alias.Aliasname
				if len(rv.Alias.Colnames) > 0 {
					alias.Colnames = rv.Alias.Colnames
				}
			}
			sel.FromClause[i] = &pg_query.Node{Node: &pg_query.Node_RangeSubselect{RangeSubselect: &pg_query.RangeSubselect{Subquery: cte.Ctequery, Alias: alias}}}
			inlined = true
			break
		}
		if !inlined {
			kept = append(kept, n)
		}
	}
	if len(kept) == 0 {
		sel.WithClause = nil
	} else {
		w.Ctes = kept
	}
}

// mergeDerived merges a query over one derived table (FROM (SELECT ...)
// AS s, as TPC-H's queries 7, 8 and 9 are written) into one query over
// the derived table's FROM: references to s's outputs become their
// expressions, and the two WHEREs are joined with AND. Only a plain
// derived table merges (no grouping, aggregates, DISTINCT, ORDER BY,
// LIMIT, windows or set operations); otherwise sel is left as it is.
func mergeDerived(sel *pg_query.SelectStmt) error {
	if len(sel.FromClause) != 1 {
		return nil
	}
	rs := sel.FromClause[0].GetRangeSubselect()
	if rs == nil || rs.Lateral || rs.Alias == nil {
		return nil
	}
	in := rs.Subquery.GetSelectStmt()
	if in == nil || in.Op != pg_query.SetOperation_SETOP_NONE || len(in.GroupClause) > 0 || in.HavingClause != nil ||
		len(in.DistinctClause) > 0 || in.LimitCount != nil || in.LimitOffset != nil || len(in.SortClause) > 0 ||
		in.WithClause != nil || len(in.WindowClause) > 0 || len(in.ValuesLists) > 0 || in.IntoClause != nil {
		return nil
	}
	outs := map[string]*pg_query.Node{}
	for i, t := range in.TargetList {
		rt := t.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			return nil
		}
		if containsAggregate(rt.Val) || containsWindowCall(rt.Val) {
			return nil // computed over the derived table's rows first
		}
		name := outputName(rt)
		if i < len(rs.Alias.Colnames) {
			name = fieldName(rs.Alias.Colnames[i])
		}
		if name == "" || outs[name] != nil {
			return nil
		}
		outs[name] = rt.Val
	}
	alias := rs.Alias.Aliasname
	repl := func(cr *pg_query.ColumnRef) *pg_query.Node {
		f := cr.Fields
		if len(f) == 2 && fieldName(f[0]) == alias || len(f) == 1 {
			return outs[fieldName(f[len(f)-1])]
		}
		return nil
	}
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil && rt.Name == "" && repl(cr) != nil {
			rt.Name = fieldName(cr.Fields[len(cr.Fields)-1]) // the output keeps its name
		}
		substituteRefs(rt.Val.ProtoReflect(), repl)
	}
	for _, n := range append(append([]*pg_query.Node{sel.WhereClause, sel.HavingClause}, sel.GroupClause...), sel.SortClause...) {
		if n != nil {
			substituteRefs(n.ProtoReflect(), repl)
		}
	}
	sel.FromClause = in.FromClause
	switch {
	case sel.WhereClause == nil:
		sel.WhereClause = in.WhereClause
	case in.WhereClause != nil:
		sel.WhereClause = &pg_query.Node{Node: &pg_query.Node_BoolExpr{BoolExpr: &pg_query.BoolExpr{
			Boolop: pg_query.BoolExprType_AND_EXPR, Args: []*pg_query.Node{in.WhereClause, sel.WhereClause}}}}
	}
	return nil
}

// substituteRefs replaces, below m, each column reference repl maps to an
// expression by a copy of it (not inside subqueries, whose names are
// their own).
func substituteRefs(m protoreflect.Message, repl func(*pg_query.ColumnRef) *pg_query.Node) {
	inspect(m, func(m protoreflect.Message) bool {
		switch n := m.Interface().(type) {
		case *pg_query.SubLink:
			return false
		case *pg_query.Node:
			if cr := n.GetColumnRef(); cr != nil {
				if r := repl(cr); r != nil {
					n.Node = proto.Clone(r).(*pg_query.Node).Node
				}
				return false
			}
		}
		return true
	})
}

// containsAggregate reports whether n calls an aggregate (outside
// subqueries).
func containsAggregate(n *pg_query.Node) bool {
	return containsCall(n, func(fc *pg_query.FuncCall) bool { return fc.Over == nil && isAggregate(fc) })
}

// containsWindowCall reports whether n calls a window function outside
// subqueries.
func containsWindowCall(n *pg_query.Node) bool {
	return containsCall(n, func(fc *pg_query.FuncCall) bool { return fc.Over != nil })
}

// containsCall reports whether n holds a function call outside
// subqueries for which is reports true.
func containsCall(n *pg_query.Node, is func(*pg_query.FuncCall) bool) bool {
	found := false
	inspect(n.ProtoReflect(), func(m protoreflect.Message) bool {
		switch x := m.Interface().(type) {
		case *pg_query.SubLink:
			return false
		case *pg_query.FuncCall:
			found = found || is(x)
		}
		return !found
	})
	return found
}

// conjuncts splits a condition into its top-level AND operands.
func conjuncts(n *pg_query.Node) []*pg_query.Node {
	if n == nil {
		return nil
	}
	if b := n.GetBoolExpr(); b != nil && b.Boolop == pg_query.BoolExprType_AND_EXPR {
		var out []*pg_query.Node
		for _, a := range b.Args {
			out = append(out, conjuncts(a)...)
		}
		return out
	}
	return []*pg_query.Node{n}
}

// andNodes joins conditions with AND (nil for none).
func andNodes(ns []*pg_query.Node) *pg_query.Node {
	switch len(ns) {
	case 0:
		return nil
	case 1:
		return ns[0]
	}
	return &pg_query.Node{Node: &pg_query.Node_BoolExpr{BoolExpr: &pg_query.BoolExpr{Boolop: pg_query.BoolExprType_AND_EXPR, Args: ns}}}
}

func andExpr(a, b *ir.Expr) *ir.Expr {
	if a == nil {
		return b
	}
	return &ir.Expr{Kind: ir.ExprBool, Op: "AND", Args: []*ir.Expr{a, b}}
}

// serverEvaluates reports whether the server can evaluate condition c
// of sel's WHERE over the onions: whether SELECT 1 FROM (sel's FROM)
// WHERE c plans.
func serverEvaluates(c *pg_query.Node, sel *pg_query.SelectStmt, version int32, lookup TableLookup) bool {
	probe := &pg_query.SelectStmt{
		TargetList:  []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeAConstIntNode(1, -1), -1)},
		FromClause:  cloneNodes(sel.FromClause),
		WhereClause: proto.Clone(c).(*pg_query.Node),
		Op:          pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
	}
	if sel.WithClause != nil {
		probe.WithClause = proto.Clone(sel.WithClause).(*pg_query.WithClause)
	}
	st := Statement{Kind: "Select", Tree: &pg_query.RawStmt{Stmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: probe}}}, version: version}
	_, err := PlanQuery(st, lookup)
	return err == nil
}
