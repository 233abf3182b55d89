package rewrite

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// selMode is what the results of one SELECT level are for.
type selMode int

const (
	modeTop     selMode = iota // the client's results
	modePlain                  // a subquery whose outputs must be plaintext
	modeExists                 // EXISTS: the outputs are not read
	modeOperand                // one output compared with an encrypted column
	modeDerived                // a derived table or CTE: encrypted outputs pass through
)

// outKind is what one output of the select list is.
type outKind int

const (
	outPlain outKind = iota
	outValue         // an encrypted column's value
	outOrd           // MIN or MAX of an encrypted column (OPE ciphertext)
	outSum           // SUM of an encrypted column (Add ciphertexts)
	outAvg           // AVG of an encrypted column
)

// output is one item of a rewritten select list.
type output struct {
	kind outKind
	name string // the client's name ("" for a plain item: the server's)
	c    *encCol
	full bool // outValue: decrypted with salts and exact value (not grouped)
	node *pg_query.Node
}

// level is the state of one SELECT level being rewritten.
type level struct {
	q           *planner
	sel         *pg_query.SelectStmt
	sc          *scope
	mode        selMode
	grouped     map[string]bool // qualifier.column of encrypted GROUP BY items
	groupedCols []*encCol       // the same columns
	outs        []output
	// opaque is set when the select list has a * over items whose columns
	// the proxy does not know: the width of the result is unknown.
	opaque bool
	// sortItems are the ORDER BY items of the outermost level (orderBy).
	sortItems []sortItem
	// In modeDerived: the row salt output of each source (qualifier.salt
	// column), and the names of the plain outputs before the first
	// encrypted one.
	saltNames  map[string]string
	plainNames []string
}

func (q *planner) topSelect(sel *pg_query.SelectStmt) error {
	_, err := q.selectLevel(sel, nil, modeTop)
	return err
}

// selectLevel rewrites one SELECT (and its subqueries) in place. In
// modeOperand it returns the operand its single output is, nil when that
// output is plain.
func (q *planner) selectLevel(sel *pg_query.SelectStmt, parent *scope, mode selMode) (*operand, error) {
	if sel == nil {
		return nil, nil
	}
	if sel.Op != pg_query.SetOperation_SETOP_NONE {
		// Each branch must produce plaintext: encrypted values of two
		// branches could not be merged or compared by the server.
		inner := modePlain
		if mode == modeExists {
			inner = modeExists
		}
		for _, b := range []*pg_query.SelectStmt{sel.Larg, sel.Rarg} {
			if _, err := q.selectLevel(b, parent, inner); err != nil {
				return nil, err
			}
		}
		if mode == modeTop {
			q.plan.PlainResults = true
		}
		for _, n := range sel.SortClause {
			if err := q.plainExpr(n, parent, "ORDER BY"); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	if sel.IntoClause != nil {
		return nil, Refusal("SELECT INTO over tables with encrypted columns is not supported: the server would store the values in plaintext")
	}
	l := &level{q: q, sel: sel, sc: &scope{parent: parent}, mode: mode, grouped: map[string]bool{}}
	if err := l.with(); err != nil {
		return nil, err
	}
	if len(sel.ValuesLists) > 0 {
		for _, row := range sel.ValuesLists {
			if err := q.plainExpr(row, parent, "VALUES"); err != nil {
				return nil, err
			}
		}
		if mode == modeTop {
			q.plan.PlainResults = true
		}
		return nil, nil
	}
	var ons []*pg_query.Node
	for _, f := range sel.FromClause {
		if err := l.fromItem(f, &ons); err != nil {
			return nil, err
		}
	}
	for _, on := range ons {
		if err := q.predicate(on, l.sc, predCtx{construct: "JOIN ... ON"}); err != nil {
			return nil, err
		}
	}
	if err := q.predicate(sel.WhereClause, l.sc, predCtx{construct: "WHERE", conj: mode == modeTop}); err != nil {
		return nil, err
	}
	if err := l.groupBy(); err != nil {
		return nil, err
	}
	if err := q.predicate(sel.HavingClause, l.sc, predCtx{construct: "HAVING", agg: true}); err != nil {
		return nil, err
	}
	l.groupOrdOfHaving()
	for _, w := range sel.WindowClause {
		if err := q.plainExpr(w, l.sc, "WINDOW"); err != nil {
			return nil, err
		}
	}
	if err := checkDistinctOrder(sel); err != nil {
		return nil, err
	}
	if on := distinctOn(sel.DistinctClause); on != nil {
		for _, n := range on {
			// An output position or name stands for that output's
			// expression.
			item := n
			if k, ok := position(n); ok && k >= 1 && k <= len(sel.TargetList) {
				item = sel.TargetList[k-1].GetResTarget().GetVal()
			} else if cr := n.GetColumnRef(); cr != nil && len(cr.Fields) == 1 {
				for _, t := range sel.TargetList {
					if rt := t.GetResTarget(); rt.Name != "" && rt.Name == fieldName(cr.Fields[0]) {
						item = rt.Val
					}
				}
			}
			if c, err := q.firstEncrypted(item, l.sc, "DISTINCT ON"); err != nil || c != nil {
				if err == nil {
					err = Refusal("DISTINCT ON over encrypted column %s is not supported", c.name())
				}
				return nil, err
			}
			if err := q.plainExpr(n, l.sc, "DISTINCT ON"); err != nil {
				return nil, err
			}
		}
	}
	op, err := l.selectList()
	if err != nil {
		return nil, err
	}
	if d := q.derivedOf[sel]; d != nil && l.opaque {
		d.opaque = true
	}
	if err := l.orderBy(); err != nil {
		return nil, err
	}
	for _, n := range []*pg_query.Node{sel.LimitCount, sel.LimitOffset} {
		if err := q.plainExpr(n, l.sc, "LIMIT"); err != nil {
			return nil, err
		}
	}
	if mode == modeTop {
		if err := l.finish(); err != nil {
			return nil, err
		}
	}
	return op, nil
}

// with rewrites the CTEs of the level; encrypted columns in their select
// lists pass through (derivedLevel).
func (l *level) with() error {
	w := l.sel.WithClause
	if w == nil {
		return nil
	}
	l.sc.ctes = map[string]*derived{}
	for _, n := range w.Ctes {
		l.sc.ctes[n.GetCommonTableExpr().GetCtename()] = nil
	}
	for _, n := range w.Ctes {
		cte := n.GetCommonTableExpr()
		sel := cte.GetCtequery().GetSelectStmt()
		if sel == nil {
			return Refusal("data-modifying WITH (%s) in a query over tables with encrypted columns is not supported", cte.Ctename)
		}
		d, err := l.q.derivedLevel(sel, l.sc, &cte.Aliascolnames)
		if err != nil {
			return err
		}
		if d != nil && w.Recursive {
			return Refusal("WITH RECURSIVE %s passing encrypted column %s through is not supported", cte.Ctename, firstEnc(d).name())
		}
		l.sc.ctes[cte.Ctename] = d
	}
	return nil
}

// fromItem adds one FROM item to the level's scope; join conditions are
// collected in ons, to be rewritten once every item is known.
func (l *level) fromItem(n *pg_query.Node, ons *[]*pg_query.Node) error {
	switch x := n.Node.(type) {
	case *pg_query.Node_RangeVar:
		rv := x.RangeVar
		qualifier := rv.Relname
		if rv.Alias != nil {
			qualifier = rv.Alias.Aliasname
			if len(rv.Alias.Colnames) > 0 {
				if t := l.table(rv); t != nil {
					return Refusal("column aliases on table %s, which the proxy manages, are not supported", t.Name)
				}
			}
		}
		if isCTE, d := l.sc.cte(rv.Relname); isCTE && rv.Schemaname == "" {
			if d != nil && rv.Alias != nil && len(rv.Alias.Colnames) > 0 {
				return Refusal("column aliases on CTE %s, which passes encrypted column %s through, are not supported", rv.Relname, firstEnc(d).name())
			}
			l.sc.items = append(l.sc.items, &rangeItem{qualifier: qualifier, derived: d})
			return nil
		}
		t := l.table(rv)
		if t != nil && t.Physical != "" && t.Physical != rv.Relname {
			if rv.Alias == nil {
				rv.Alias = &pg_query.Alias{Aliasname: rv.Relname}
			}
			rv.Relname = t.Physical
		}
		l.sc.items = append(l.sc.items, &rangeItem{qualifier: qualifier, table: t})
	case *pg_query.Node_JoinExpr:
		j := x.JoinExpr
		before := len(l.sc.items)
		if err := l.fromItem(j.Larg, ons); err != nil {
			return err
		}
		if err := l.fromItem(j.Rarg, ons); err != nil {
			return err
		}
		for _, it := range l.sc.items[before:] {
			if !it.encrypted() {
				continue
			}
			if j.IsNatural {
				return Refusal("NATURAL JOIN with %s with encrypted columns is not supported: name the join columns", it.describe())
			}
			for _, u := range j.UsingClause {
				if it.derived != nil && it.derived.enc[fieldName(u)] != nil {
					return Refusal("JOIN ... USING (%s) on encrypted column %s.%s is not supported: write JOIN ... ON", fieldName(u), it.qualifier, fieldName(u))
				}
				if it.table == nil {
					continue
				}
				if c := it.table.Column(fieldName(u)); c != nil && c.Policy != catalog.Plain {
					return Refusal("JOIN ... USING (%s) on encrypted column %s.%s is not supported: write JOIN ... ON", c.Name, it.table.Name, c.Name)
				}
			}
			if j.Alias != nil {
				return Refusal("an alias for a join with %s with encrypted columns is not supported", it.describe())
			}
		}
		if j.Quals != nil {
			*ons = append(*ons, j.Quals)
		}
	case *pg_query.Node_RangeSubselect:
		rs := x.RangeSubselect
		parent := l.sc.parent
		if rs.Lateral {
			parent = l.sc
		}
		var colnames []*pg_query.Node
		if rs.Alias != nil {
			colnames = rs.Alias.Colnames
		}
		d, err := l.q.derivedLevel(rs.Subquery.GetSelectStmt(), parent, &colnames)
		if err != nil {
			return err
		}
		qualifier := ""
		if rs.Alias != nil {
			qualifier = rs.Alias.Aliasname
			rs.Alias.Colnames = colnames
		}
		l.sc.items = append(l.sc.items, &rangeItem{qualifier: qualifier, derived: d})
	default:
		if err := l.q.plainExpr(n, l.sc, "FROM"); err != nil {
			return err
		}
		qualifier := ""
		if rf := n.GetRangeFunction(); rf != nil && rf.Alias != nil {
			qualifier = rf.Alias.Aliasname
		}
		l.sc.items = append(l.sc.items, &rangeItem{qualifier: qualifier})
	}
	return nil
}

// table returns the catalog table a FROM item names, nil for a CTE or a
// table the catalog does not have.
func (l *level) table(rv *pg_query.RangeVar) *catalog.Table {
	if isCTE, _ := l.sc.cte(rv.Relname); isCTE && rv.Schemaname == "" {
		return nil
	}
	return l.q.lookup.table(rv)
}

// groupBy rewrites GROUP BY: an encrypted column groups on its Eq onion.
func (l *level) groupBy() error {
	for i, n := range l.sel.GroupClause {
		c, err := l.groupItem(n)
		if err != nil {
			return err
		}
		if c == nil {
			if err := l.q.plainExpr(n, l.sc, "GROUP BY"); err != nil {
				return err
			}
			continue
		}
		c.construct = "GROUP BY"
		if err := l.q.need(c, onion.KindEq); err != nil {
			return err
		}
		if err := refuseLossy(c, "GROUP BY"); err != nil {
			return err
		}
		l.grouped[c.qualifier+"."+c.col.Name] = true
		l.groupedCols = append(l.groupedCols, c)
		if n.GetAConst() == nil {
			l.sel.GroupClause[i] = c.ref("_eq")
		}
	}
	return nil
}

// groupOrdOfHaving adds to GROUP BY the Ord onion of each grouped column
// HAVING compares by order (HAVING c > 5 became c__ord > ...): grouping is
// on the Eq onion, and the server accepts only grouped columns outside
// aggregates. The Ord onion is a function of the same value, so adding it
// does not split groups.
func (l *level) groupOrdOfHaving() {
	if l.sel.HavingClause == nil || len(l.groupedCols) == 0 {
		return
	}
	used := map[string]bool{}
	inspect(l.sel.HavingClause.ProtoReflect(), func(m protoreflect.Message) bool {
		if cr, ok := m.Interface().(*pg_query.ColumnRef); ok {
			if names := stringList(cr.Fields); len(names) == 2 {
				used[names[0]+"."+names[1]] = true
			}
			return false
		}
		return true
	})
	for _, c := range l.groupedCols {
		key := c.qualifier + "." + physicalPrefix(c.col.Name) + "_ord"
		if used[key] {
			l.sel.GroupClause = append(l.sel.GroupClause, c.ref("_ord"))
			used[key] = false
		}
	}
}

// groupItem returns the encrypted column a GROUP BY item names: an input
// column, else an output alias or position of the select list.
func (l *level) groupItem(n *pg_query.Node) (*encCol, error) {
	if cr := n.GetColumnRef(); cr != nil {
		c, err := l.sc.resolve(cr, "GROUP BY")
		if err != nil || c != nil || len(cr.Fields) != 1 {
			return c, err
		}
		for _, t := range l.sel.TargetList {
			rt := t.GetResTarget()
			if rt.Name == fieldName(cr.Fields[0]) {
				if tcr := rt.Val.GetColumnRef(); tcr != nil {
					return l.sc.resolve(tcr, "GROUP BY")
				}
				return nil, nil
			}
		}
		return nil, nil
	}
	if k, ok := position(n); ok && k >= 1 && k <= len(l.sel.TargetList) {
		if tcr := l.sel.TargetList[k-1].GetResTarget().Val.GetColumnRef(); tcr != nil {
			return l.sc.resolve(tcr, "GROUP BY")
		}
	}
	return nil, nil
}

// position returns the integer of an output position (ORDER BY 2).
func position(n *pg_query.Node) (int, bool) {
	c := n.GetAConst()
	if c == nil {
		return 0, false
	}
	iv, ok := c.Val.(*pg_query.A_Const_Ival)
	if !ok {
		return 0, false
	}
	return int(iv.Ival.Ival), true
}

// refuseLossy refuses grouping (or DISTINCT) on a column whose Eq onion
// does not determine how its value prints (unconstrained numeric, bpchar
// without length): the group's representative could not be shown.
func refuseLossy(c *encCol, construct string) error {
	_, layout, err := columnLayout(c.col)
	if err != nil {
		return err
	}
	for _, pc := range layout {
		if pc.Suffix == "_val" {
			hint := "declare the column with a precision and scale (or a length)"
			if t, err := ColumnType(c.col); err == nil {
				switch t.Base {
				case onion.Float8, onion.Float4:
					hint = "-0 and 0 are equal but print differently"
				case onion.Array:
					hint = "the proxy does not group arrays yet"
				}
			}
			return Refusal("%s on encrypted column %s of type %s is not supported: equal values may print differently; %s", construct, c.name(), c.col.Type, hint)
		}
	}
	return nil
}

// isGrouped reports whether the level aggregates its rows.
func (l *level) isGrouped() bool {
	if len(l.sel.GroupClause) > 0 || l.sel.HavingClause != nil {
		return true
	}
	for _, t := range l.sel.TargetList {
		if fc := t.GetResTarget().GetVal().GetFuncCall(); fc != nil && fc.Over == nil && isAggregate(fc) {
			return true
		}
	}
	return false
}

func isAggregate(fc *pg_query.FuncCall) bool {
	if fc.AggStar || fc.AggDistinct || fc.AggFilter != nil || len(fc.AggOrder) > 0 {
		return true
	}
	return slices.Contains([]string{"count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every",
		"string_agg", "array_agg", "json_agg", "jsonb_agg", "json_object_agg", "jsonb_object_agg", "xmlagg",
		"stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop", "bit_and", "bit_or", "bit_xor",
		"corr", "covar_pop", "covar_samp", "regr_avgx", "regr_avgy", "regr_count", "regr_intercept", "regr_r2",
		"regr_slope", "regr_sxx", "regr_sxy", "regr_syy", "range_agg", "range_intersect_agg"}, funcName(fc))
}
