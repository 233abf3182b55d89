package rewrite

import (
	"slices"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
)

// selectList rewrites the level's select list. In modeOperand it returns
// the operand of its single output (nil when plain).
func (l *level) selectList() (*operand, error) {
	sel := l.sel
	if l.mode == modeExists {
		for _, t := range sel.TargetList {
			if l.touchesEncrypted(t.GetResTarget().Val) {
				// EXISTS reads no values: select a constant instead.
				sel.TargetList = []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(pg_query.MakeAConstIntNode(1, -1), -1)}
				return nil, nil
			}
		}
	}
	if l.mode == modeOperand && len(sel.TargetList) == 1 {
		rt := sel.TargetList[0].GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil {
			c, err := l.sc.resolve(cr, "the select list")
			if err != nil || c != nil {
				if c != nil && l.isGrouped() {
					if err := refuseLossy(c, "GROUP BY"); err != nil {
						return nil, err
					}
				}
				if c == nil {
					return nil, err
				}
				return l.q.columnOperand(c), nil
			}
		}
		if fc := rt.Val.GetFuncCall(); fc != nil {
			op, err := l.q.aggOperand(fc, l.sc, "the select list")
			if err != nil || op != nil {
				return op, err
			}
		}
	}
	grouped := l.isGrouped() || plainDistinct(sel.DistinctClause)
	if l.mode == modeDerived {
		list, err := l.expandStars(sel.TargetList)
		if err != nil {
			return nil, err
		}
		sel.TargetList = list
	}
	var targets []*pg_query.Node
	for _, t := range sel.TargetList {
		rt := t.GetResTarget()
		if cr := rt.Val.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
			expanded, err := l.star(cr, grouped)
			if err != nil {
				return nil, err
			}
			targets = append(targets, expanded...)
			if expanded == nil {
				targets = append(targets, t)
			}
			continue
		}
		if cr := rt.Val.GetColumnRef(); cr != nil {
			c, err := l.sc.resolve(cr, "the select list")
			if err != nil {
				return nil, err
			}
			if c != nil {
				name := rt.Name
				if name == "" {
					name = fieldName(cr.Fields[len(cr.Fields)-1])
				}
				if l.mode == modeDerived {
					pass, err := l.passThrough(c, name)
					if err != nil {
						return nil, err
					}
					targets = append(targets, pass...)
					continue
				}
				n, err := l.value(c, name, grouped)
				if err != nil {
					return nil, err
				}
				targets = append(targets, n)
				continue
			}
		}
		if fc := rt.Val.GetFuncCall(); fc != nil {
			ok, err := l.aggregate(fc, rt)
			if err != nil {
				return nil, err
			}
			if ok {
				l.notePlainOutput(rt)
				targets = append(targets, t)
				continue
			}
		}
		if ok, err := l.scalarSubquery(rt, grouped); err != nil || ok {
			if err != nil {
				return nil, err
			}
			targets = append(targets, t)
			continue
		}
		l.conditionAsCase(rt)
		if err := l.q.plainExpr(rt.Val, l.sc, "the select list"); err != nil {
			return nil, err
		}
		l.outs = append(l.outs, output{kind: outPlain, name: rt.Name, node: rt.Val})
		l.notePlainOutput(rt)
		targets = append(targets, t)
	}
	sel.TargetList = targets
	return nil, nil
}

// touchesEncrypted reports whether n references an encrypted column or
// the whole row of a table with encrypted columns (outside subqueries).
func (l *level) touchesEncrypted(n *pg_query.Node) bool {
	if cr := n.GetColumnRef(); cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() != nil {
		if len(cr.Fields) == 1 {
			for _, it := range l.sc.items {
				if it.encrypted() {
					return true
				}
			}
			return false
		}
		it := l.sc.item(fieldName(cr.Fields[len(cr.Fields)-2]))
		return it != nil && it.encrypted()
	}
	c, err := l.q.firstEncrypted(n, l.sc, "the select list")
	return c != nil || err != nil
}

// star expands * or q.* over items with encrypted columns; nil when the
// items are all plain (the * stays as written).
func (l *level) star(cr *pg_query.ColumnRef, grouped bool) ([]*pg_query.Node, error) {
	var items []*rangeItem
	if len(cr.Fields) == 1 {
		items = l.sc.items
	} else if it := l.sc.item(fieldName(cr.Fields[len(cr.Fields)-2])); it != nil {
		items = []*rangeItem{it}
	}
	encrypted, unknown := false, false
	var first *rangeItem
	for _, it := range items {
		switch {
		case it.encrypted():
			encrypted = true
			if first == nil {
				first = it
			}
		case it.table == nil:
			unknown = true
		}
	}
	if !encrypted {
		l.opaque = true
		return nil, nil
	}
	if unknown {
		return nil, Refusal("* over %s with encrypted columns together with other FROM items is not supported: list the columns", first.describe())
	}
	if l.mode != modeTop {
		return nil, Refusal("* over %s with encrypted columns in a subquery is not supported: list the columns", first.describe())
	}
	var out []*pg_query.Node
	for _, it := range items {
		if d := it.derived; d != nil {
			if d.opaque || slices.Contains(d.names, "") {
				return nil, Refusal("* over %s, which passes encrypted column %s through, is not supported: list the columns", it.qualifier, firstEnc(d).name())
			}
			for _, name := range d.names {
				c, err := d.column(it.qualifier, name, "the select list")
				if err != nil {
					return nil, err
				}
				if c == nil {
					ref := pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(it.qualifier), pg_query.MakeStrNode(name)}, -1)
					out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(name, ref, -1))
					l.outs = append(l.outs, output{kind: outPlain, name: name, node: ref})
					continue
				}
				n, err := l.value(c, name, grouped)
				if err != nil {
					return nil, err
				}
				out = append(out, n)
			}
			continue
		}
		for i := range it.table.Columns {
			col := &it.table.Columns[i]
			c := &encCol{table: it.table, col: col, qualifier: it.qualifier, construct: "the select list"}
			if col.Policy == catalog.Plain {
				out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(col.Name, c.rowRef(col.Name), -1))
				l.outs = append(l.outs, output{kind: outPlain, name: col.Name, node: c.rowRef(col.Name)})
				continue
			}
			n, err := l.value(c, col.Name, grouped)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
	}
	return out, nil
}

// conditionAsCase writes a select list item that is a condition over an
// encrypted column (year < 2000, a IS NULL, p AND q) as CASE WHEN p THEN
// true WHEN NOT p THEN false END, the same value (NULL when p is), so
// that the server evaluates p over the onions as it does in WHERE. The
// output keeps the name PostgreSQL gives the condition. Only inside
// subqueries: in the outermost select list split execution computes the
// condition in the proxy, which reveals less (and takes a parameter of
// another type, year >= 1999.5 over a smallint).
func (l *level) conditionAsCase(rt *pg_query.ResTarget) {
	if l.mode == modeTop {
		return
	}
	switch x := rt.Val.Node.(type) {
	case *pg_query.Node_AExpr:
		if x.AExpr.Kind != pg_query.A_Expr_Kind_AEXPR_OP {
			return
		}
		switch strings.Join(stringList(x.AExpr.Name), ".") {
		case "=", "<>", "<", "<=", ">", ">=":
		default:
			return
		}
	case *pg_query.Node_BoolExpr, *pg_query.Node_NullTest:
	default:
		return
	}
	if c, err := l.q.firstEncrypted(rt.Val, l.sc, "the select list"); c == nil || err != nil {
		return
	}
	if rt.Name == "" {
		if rt.Name, _ = figureColname(rt.Val); rt.Name == "" {
			rt.Name = "?column?"
		}
	}
	p := rt.Val
	not := &pg_query.Node{Node: &pg_query.Node_BoolExpr{BoolExpr: &pg_query.BoolExpr{Boolop: pg_query.BoolExprType_NOT_EXPR,
		Args: []*pg_query.Node{proto.Clone(p).(*pg_query.Node)}, Location: -1}}}
	when := func(cond *pg_query.Node, v bool) *pg_query.Node {
		return &pg_query.Node{Node: &pg_query.Node_CaseWhen{CaseWhen: &pg_query.CaseWhen{Expr: cond, Result: boolConst(v), Location: -1}}}
	}
	rt.Val = &pg_query.Node{Node: &pg_query.Node_CaseExpr{CaseExpr: &pg_query.CaseExpr{Args: []*pg_query.Node{when(p, true), when(not, false)}, Location: -1}}}
}

// expandStars writes * and q.* over items with encrypted columns in the
// select list of a derived table as the columns they stand for (Django's
// QUALIFY emulation selects * from a subquery), so that each is passed
// through as a listed column is.
func (l *level) expandStars(list []*pg_query.Node) ([]*pg_query.Node, error) {
	var out []*pg_query.Node
	for _, t := range list {
		rt := t.GetResTarget()
		cr := rt.GetVal().GetColumnRef()
		if cr == nil || cr.Fields[len(cr.Fields)-1].GetAStar() == nil {
			out = append(out, t)
			continue
		}
		items := l.sc.items
		if len(cr.Fields) > 1 {
			it := l.sc.item(fieldName(cr.Fields[len(cr.Fields)-2]))
			if it == nil {
				out = append(out, t) // the server names the error
				continue
			}
			items = []*rangeItem{it}
		}
		enc := slices.IndexFunc(items, (*rangeItem).encrypted)
		if enc < 0 {
			out = append(out, t)
			continue
		}
		for _, it := range items {
			var names []string
			switch {
			case it.derived != nil:
				if it.derived.opaque || slices.Contains(it.derived.names, "") {
					return nil, Refusal("* over %s, whose columns are not all named, with encrypted columns in a subquery is not supported: list the columns", it.describe())
				}
				names = it.derived.names
			case it.table != nil:
				for _, c := range it.table.Columns {
					names = append(names, c.Name)
				}
			default:
				return nil, Refusal("* over %s with encrypted columns together with other FROM items is not supported: list the columns", items[enc].describe())
			}
			for _, name := range names {
				ref := pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(it.qualifier), pg_query.MakeStrNode(name)}, -1)
				out = append(out, pg_query.MakeResTargetNodeWithNameAndVal(name, ref, -1))
			}
		}
	}
	return out, nil
}

// scalarSubquery rewrites a select list item that is a scalar subquery
// returning an encrypted column, (SELECT c FROM ... LIMIT 1), to return
// that column's Eq onion: the value is decrypted as a grouped column's
// is, without the row's salts (the subquery's row is not the client's);
// (SELECT max(c) ...) returns max's Ord onion. It reports false for any
// other item, untouched.
func (l *level) scalarSubquery(rt *pg_query.ResTarget, grouped bool) (bool, error) {
	sl := rt.Val.GetSubLink()
	if l.mode != modeTop || sl == nil || sl.SubLinkType != pg_query.SubLinkType_EXPR_SUBLINK {
		return false, nil
	}
	sub := sl.Subselect.GetSelectStmt()
	if sub == nil || sub.Op != pg_query.SetOperation_SETOP_NONE || len(sub.TargetList) != 1 {
		return false, nil
	}
	srt := sub.TargetList[0].GetResTarget()
	cr := srt.GetVal().GetColumnRef()
	fc := srt.GetVal().GetFuncCall()
	switch {
	case cr != nil && cr.Fields[len(cr.Fields)-1].GetAStar() == nil:
	case fc != nil && (funcName(fc) == "min" || funcName(fc) == "max") && len(fc.Args) == 1 && fc.Over == nil:
	default:
		return false, nil
	}
	name := rt.Name
	if name == "" {
		name = outputName(srt)
	}
	op, err := l.q.operand(rt.Val, l.sc, predCtx{construct: "the select list"})
	if err != nil {
		return false, err
	}
	if op == nil {
		// A plain subquery, rewritten.
		l.outs = append(l.outs, output{kind: outPlain, name: rt.Name, node: rt.Val})
		l.notePlainOutput(rt)
		return true, nil
	}
	if fc != nil && op.ord != nil && op.c != nil {
		// MIN or MAX: its Ord onion, decrypted as the select list's
		// MIN and MAX are.
		if _, err := op.ord(); err != nil {
			return false, err
		}
		rt.Name = name
		l.outs = append(l.outs, output{kind: outOrd, name: name, c: op.c})
		return true, nil
	}
	if op.eq == nil || op.c == nil {
		return false, Refusal("a subquery returning %s in the select list is not supported", op.desc)
	}
	c := op.c
	if err := refuseLossy(c, "a subquery's select list"); err != nil {
		return false, err
	}
	if _, err := op.eq(); err != nil {
		return false, err
	}
	if grouped {
		c.construct = "GROUP BY or DISTINCT"
	}
	rt.Name = name
	l.outs = append(l.outs, output{kind: outValue, name: name, c: c})
	return true, nil
}

// value is an encrypted column in the select list: its Eq onion (the
// salts and exact value are added as hidden columns by finish, unless the
// rows are grouped or DISTINCT, where they would split groups).
func (l *level) value(c *encCol, name string, grouped bool) (*pg_query.Node, error) {
	if l.mode != modeTop {
		return nil, Refusal("encrypted column %s in the select list of a subquery, CTE or UNION is not supported yet", c.name())
	}
	if grouped {
		c.construct = "GROUP BY or DISTINCT"
		if err := refuseLossy(c, c.construct); err != nil {
			return nil, err
		}
		if err := l.q.need(c, onion.KindEq); err != nil {
			return nil, err
		}
	}
	l.outs = append(l.outs, output{kind: outValue, name: name, c: c, full: !grouped})
	return pg_query.MakeResTargetNodeWithNameAndVal(name, c.ref("_eq"), -1), nil
}

// aggregate rewrites COUNT, MIN, MAX, SUM and AVG of an encrypted column;
// false for any other call.
func (l *level) aggregate(fc *pg_query.FuncCall, rt *pg_query.ResTarget) (bool, error) {
	name := funcName(fc)
	if fc.AggFilter != nil && fc.Over == nil {
		if err := l.q.predicate(fc.AggFilter, l.sc, predCtx{construct: "FILTER"}); err != nil {
			return false, err
		}
		l.q.done(fc.AggFilter)
	}
	if fc.Over != nil || len(fc.Args) != 1 {
		return false, nil
	}
	cr := fc.Args[0].GetColumnRef()
	if cr == nil {
		return false, nil
	}
	c, err := l.sc.resolve(cr, "the select list")
	if err != nil || c == nil {
		return false, err
	}
	c.construct = name
	if len(fc.AggOrder) > 0 {
		return false, Refusal("ORDER BY inside %s over encrypted column %s is not supported", name, c.name())
	}
	outName := rt.Name
	if outName == "" {
		outName = name
	}
	switch name {
	case "count":
		if fc.AggDistinct {
			c.construct = "COUNT(DISTINCT)"
			if err := l.q.need(c, onion.KindEq); err != nil {
				return false, err
			}
		}
		fc.Args[0] = c.presence()
		l.outs = append(l.outs, output{kind: outPlain, name: rt.Name, node: rt.Val})
		return true, nil
	case "min", "max":
		if l.mode != modeTop {
			return false, Refusal("%s of encrypted column %s in the select list of a subquery is only supported compared with the column", name, c.name())
		}
		op, err := l.q.aggOperand(fc, l.sc, "the select list")
		if err != nil {
			return false, err
		}
		if _, err := op.ord(); err != nil {
			return false, err
		}
		rt.Name = outName
		l.outs = append(l.outs, output{kind: outOrd, name: outName, c: c})
		return true, nil
	case "sum", "avg":
		if l.mode != modeTop {
			return false, Refusal("%s of encrypted column %s in a subquery is not supported", name, c.name())
		}
		if fc.AggDistinct {
			return false, Refusal("%s(DISTINCT) over encrypted column %s is not supported", name, c.name())
		}
		if !hasCapability(c.col, onion.KindAdd) {
			return false, Refusal("%s over encrypted column %s needs its add onion, which its policy does not give it", name, c.name())
		}
		if !c.col.Incremented {
			// Split execution decrypts the Eq cells in the proxy: about
			// 0.6 µs and 32 bytes per row, against 17 µs and 768 bytes
			// per Add ciphertext and a 12.5 ms decryption (README,
			// Performance model). Only a column whose Eq cells an
			// increment left NULL needs its Add onion.
			return false, Refusal("%s over encrypted column %s is computed by the proxy from its Eq onion, cheaper than from its add onion", name, c.name())
		}
		if plainDistinct(l.sel.DistinctClause) {
			return false, Refusal("SELECT DISTINCT with %s over encrypted column %s is not supported", name, c.name())
		}
		// The server concatenates the group's Add ciphertexts (fixed
		// width); the proxy multiplies them modulo n² and decrypts.
		filter := fc.AggFilter
		fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode("string_agg")}
		fc.Args = []*pg_query.Node{c.ref("_add"), typeCast(pg_query.MakeAConstStrNode("", -1), "bytea", false)}
		rt.Name = outName
		kind := outSum
		if name == "avg" {
			kind = outAvg
			count := &pg_query.FuncCall{Funcname: []*pg_query.Node{pg_query.MakeStrNode("count")}, Args: []*pg_query.Node{c.ref("_add")}, AggFilter: filter, Location: -1}
			l.q.avgCounts = append(l.q.avgCounts, &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: count}})
		}
		l.outs = append(l.outs, output{kind: kind, name: outName, c: c})
		return true, nil
	}
	return false, nil
}

// orderBy rewrites ORDER BY: an encrypted column sorts on its Ord onion.
// At the outermost level each item is also recorded (sortItems) for an
// order the proxy completes (encrypted text keys, ProxySort).
func (l *level) orderBy() error {
	for _, n := range l.sel.SortClause {
		sb := n.GetSortBy()
		if sb == nil {
			continue
		}
		it := sortItem{sb: sb, out: -1, cipherOut: -1}
		if err := l.sortItem(&it); err != nil {
			return err
		}
		l.sortItems = append(l.sortItems, it)
	}
	return nil
}

// sortItem rewrites one ORDER BY item and describes it in it.
func (l *level) sortItem(it *sortItem) error {
	sb := it.sb
	if o := l.outputNamed(sb.Node); o != nil {
		k := l.outIndex(o)
		switch o.kind {
		case outPlain:
			it.plain = o.node
			return nil // the server sorts its own output
		case outOrd:
			it.cipherOut = k // OPE sorts
			return nil
		case outSum, outAvg:
			return Refusal("ORDER BY on %s over encrypted column %s is not supported", o.name, o.c.name())
		}
		it.out = k
		return l.sortOn(it, o.c)
	}
	if o := l.plainOutputNamed(sb.Node); o != nil {
		// An output name wins over input columns, as in PostgreSQL: the
		// server sorts its own output (a rank repeats its expression).
		it.plain = o.node
		if it.plain != nil && hasSubLink(it.plain) {
			it.plain = nil
		}
		return nil
	}
	if cr := sb.Node.GetColumnRef(); cr != nil {
		c, err := l.sc.resolve(cr, "ORDER BY")
		if err != nil {
			return err
		}
		if c != nil {
			it.out = l.valueOutput(c)
			return l.sortOn(it, c)
		}
	}
	if fc := sb.Node.GetFuncCall(); fc != nil {
		op, err := l.q.aggOperand(fc, l.sc, "ORDER BY")
		if err != nil {
			return err
		}
		if op != nil {
			if sb.Node, err = op.ord(); err != nil {
				return err
			}
			it.cipher = sb.Node
			return nil
		}
	}
	if err := l.q.plainExpr(sb.Node, l.sc, "ORDER BY"); err != nil {
		return err
	}
	if !hasSubLink(sb.Node) {
		it.plain = sb.Node
	}
	return nil
}

// plainOutputNamed returns the plain select-list output a one-name ORDER
// BY item names, nil otherwise.
func (l *level) plainOutputNamed(n *pg_query.Node) *output {
	cr := n.GetColumnRef()
	if cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetAStar() != nil {
		return nil
	}
	name := fieldName(cr.Fields[0])
	for i := range l.outs {
		if o := &l.outs[i]; o.kind == outPlain && o.name == name && name != "" {
			return o
		}
	}
	return nil
}

// outIndex returns the index of o in l.outs.
func (l *level) outIndex(o *output) int {
	for i := range l.outs {
		if &l.outs[i] == o {
			return i
		}
	}
	return -1
}

// valueOutput returns the index of the output showing c's value, -1.
func (l *level) valueOutput(c *encCol) int {
	for i, o := range l.outs {
		if o.kind == outValue && o.c.qualifier == c.qualifier && o.c.col.ID == c.col.ID {
			return i
		}
	}
	return -1
}

// outputNamed returns the select-list output an ORDER BY item names by
// position or by output name (which PostgreSQL prefers over input
// columns), nil otherwise.
func (l *level) outputNamed(n *pg_query.Node) *output {
	if k, ok := position(n); ok {
		if k >= 1 && k <= len(l.outs) && !l.opaque {
			return &l.outs[k-1]
		}
		return nil
	}
	cr := n.GetColumnRef()
	if cr == nil || len(cr.Fields) != 1 {
		return nil
	}
	name := fieldName(cr.Fields[0])
	for i := range l.outs {
		if l.outs[i].kind != outPlain && l.outs[i].name == name {
			return &l.outs[i]
		}
	}
	return nil
}

// sortOn makes a sort item sort on c's Ord onion. An encrypted text key
// sorts on its prefix; the proxy completes the order (proxySort).
func (l *level) sortOn(it *sortItem, c *encCol) error {
	sb := it.sb
	c.construct = "ORDER BY"
	text := isText(c)
	if text {
		if l.mode != modeTop {
			return Refusal("ORDER BY on encrypted text column %s in a subquery is not supported: the server orders encrypted text only by its first %d bytes", c.name(), onion.OrdPrefixLen)
		}
		if sb.SortbyDir == pg_query.SortByDir_SORTBY_USING {
			return Refusal("ORDER BY ... USING on encrypted text column %s is not supported", c.name())
		}
	}
	if text && c.col.Policy == catalog.Encrypted && !hasCapability(c.col, onion.KindOrd) {
		// No Ord onion (text gets none by default): the proxy sorts on
		// the decrypted values; the server learns nothing of the order.
		it.text, it.unordered = c, true
		sb.Node = c.ref("_eq")
		if plainDistinct(l.sel.DistinctClause) && l.mode != modeTop {
			return Refusal("ORDER BY on encrypted column %s in a DISTINCT subquery is not supported", c.name())
		}
		return nil
	}
	if err := l.q.need(c, onion.KindOrd); err != nil {
		return err
	}
	sb.Node = c.ref("_ord")
	if text {
		it.text = c
	} else {
		it.cipher = c.ref("_ord")
	}
	if l.grouped[c.qualifier+"."+c.col.Name] {
		// Grouping on the Eq onion: the Ord onion is a function of the
		// same value, so adding it does not split groups.
		l.sel.GroupClause = append(l.sel.GroupClause, c.ref("_ord"))
	}
	if plainDistinct(l.sel.DistinctClause) {
		if l.mode != modeTop {
			return Refusal("ORDER BY on encrypted column %s in a DISTINCT subquery is not supported", c.name())
		}
		l.q.distinctOrd = append(l.q.distinctOrd, c.ref("_ord"))
	}
	return nil
}

// finish completes the outermost level: hidden columns, the result
// columns, and the proxy's LIMIT when rows are filtered in the proxy.
func (l *level) finish() error {
	q, sel := l.q, l.sel
	grouped := l.isGrouped() || plainDistinct(sel.DistinctClause)
	textSort := l.textKey() >= 0
	if rs := q.plan.Residuals; len(rs) > 0 {
		what := "LIKE"
		if rs[0].Like == nil {
			what = "a range comparison"
		}
		c := q.residualCols[rs[0].Column].c
		switch {
		case grouped:
			return Refusal("%s on encrypted column %s together with aggregates, GROUP BY or DISTINCT is not supported: the proxy checks it on the rows the server returns", what, c.name())
		case slices.ContainsFunc(sel.TargetList, containsWindowCall) || slices.ContainsFunc(sel.SortClause, containsWindowCall):
			// The server would compute them over rows the proxy drops.
			return Refusal("%s on encrypted column %s together with window functions is not supported: the proxy checks it on the rows the server returns", what, c.name())
		case sel.LimitOption == pg_query.LimitOption_LIMIT_OPTION_WITH_TIES:
			return Refusal("FETCH ... WITH TIES together with %s on encrypted column %s is not supported", what, c.name())
		}
	}
	if len(q.plan.Residuals) > 0 || textSort {
		var err error
		if q.plan.Limit, err = limitValue(sel.LimitCount); err != nil {
			return err
		}
		if q.plan.Offset, err = limitValue(sel.LimitOffset); err != nil {
			return err
		}
		sel.LimitCount, sel.LimitOffset = nil, nil
	}
	needsDecoding := len(q.residualCols) > 0 || textSort
	for _, o := range l.outs {
		if o.kind != outPlain {
			needsDecoding = true
		}
	}
	if !needsDecoding {
		q.plan.PlainResults = true
		return nil
	}
	if l.opaque {
		return Refusal("* over FROM items without encrypted columns together with encrypted values in the select list is not supported: list the columns")
	}
	visible := len(sel.TargetList)
	rowSalts := map[string]int{}
	hidden := func(n *pg_query.Node) int {
		sel.TargetList = append(sel.TargetList, pg_query.MakeResTargetNodeWithVal(n, -1))
		return len(sel.TargetList) - 1
	}
	full := func(rc *ResultColumn, c *encCol) error {
		_, layout, err := columnLayout(c.col)
		if err != nil {
			return err
		}
		for _, pc := range layout {
			switch pc.Suffix {
			case "_val":
				rc.Val = hidden(c.ref("_val"))
			case SaltSuffix:
				rc.Salt = hidden(c.ref(SaltSuffix))
			}
		}
		if c.col.Incremented {
			rc.Add = hidden(c.ref("_add"))
		}
		k, ok := rowSalts[c.qualifier+"."+c.saltName()]
		if !ok {
			k = hidden(c.saltRef())
			rowSalts[c.qualifier+"."+c.saltName()] = k
		}
		rc.RowSalt = k
		return nil
	}
	cols := make([]ResultColumn, 0, visible+len(q.residualCols))
	avg := 0
	for i, o := range l.outs {
		rc := ResultColumn{Name: o.name, Server: i, Val: -1, Salt: -1, RowSalt: -1, Count: -1, Add: -1}
		if o.c != nil {
			rc.Column, rc.Table = o.c.col, o.c.table
		}
		switch o.kind {
		case outValue:
			rc.Decode = DecodeValue
			if o.full {
				if err := full(&rc, o.c); err != nil {
					return err
				}
			}
		case outOrd:
			rc.Decode = DecodeOrd
		case outSum:
			rc.Decode = DecodeSum
		case outAvg:
			rc.Decode = DecodeAvg
			rc.Count = hidden(q.avgCounts[avg])
			avg++
		}
		cols = append(cols, rc)
	}
	for _, n := range q.distinctOrd {
		hidden(n)
	}
	if textSort {
		if err := l.proxySort(hidden, visible); err != nil {
			return err
		}
	}
	if len(q.plan.Residuals) > 0 {
		sel.LimitOption = pg_query.LimitOption_LIMIT_OPTION_DEFAULT
	}
	for _, h := range q.residualCols {
		c := h.c
		rc := ResultColumn{Name: c.col.Name, Val: -1, Salt: -1, RowSalt: -1, Count: -1, Add: -1, Column: c.col, Table: c.table, Decode: DecodeValue}
		rc.Server = hidden(c.ref("_eq"))
		if h.full {
			if err := full(&rc, c); err != nil {
				return err
			}
		}
		cols = append(cols, rc)
	}
	for i := range q.plan.Residuals {
		q.plan.Residuals[i].Column += visible
	}
	q.plan.Columns, q.plan.Visible, q.plan.ServerColumns = cols, visible, len(sel.TargetList)
	return nil
}

// limitValue reads a LIMIT or OFFSET the proxy applies: a constant, a
// parameter, NULL or ALL.
func limitValue(n *pg_query.Node) (ir.LimitValue, error) {
	if n == nil {
		return ir.LimitValue{}, nil
	}
	if tc := n.GetTypeCast(); tc != nil {
		n = tc.Arg
	}
	if p := n.GetParamRef(); p != nil {
		return ir.LimitValue{Param: int(p.Number)}, nil
	}
	if c := n.GetAConst(); c != nil {
		if c.Isnull {
			return ir.LimitValue{}, nil
		}
		switch v := c.Val.(type) {
		case *pg_query.A_Const_Ival:
			x := int64(v.Ival.Ival)
			return ir.LimitValue{Const: &x}, nil
		case *pg_query.A_Const_Fval:
			if x, err := strconv.ParseInt(v.Fval.Fval, 10, 64); err == nil {
				return ir.LimitValue{Const: &x}, nil
			}
		case *pg_query.A_Const_Sval:
			// LIMIT '5': the server reads the literal as bigint (clients
			// that inline parameters send them so).
			if x, err := strconv.ParseInt(strings.TrimSpace(v.Sval.Sval), 10, 64); err == nil {
				return ir.LimitValue{Const: &x}, nil
			}
		}
	}
	return ir.LimitValue{}, Refusal("LIMIT or OFFSET with an expression together with LIKE, a range or ORDER BY on an encrypted text column is not supported: use a constant or a parameter")
}
