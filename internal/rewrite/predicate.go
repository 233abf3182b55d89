package rewrite

import (
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// predCtx is where a condition appears.
type predCtx struct {
	construct string // "WHERE", "JOIN ... ON", "HAVING", "FILTER"
	// conj is set while the condition is a top-level conjunct of the
	// outermost query's WHERE: a residual check in the proxy (LIKE) can
	// only drop rows there.
	conj bool
	// agg allows aggregates of encrypted columns as operands (HAVING).
	agg bool
}

// operand is one side of a comparison that involves an encrypted
// column: the column itself, MIN or MAX of it, or a scalar subquery
// returning one of these. eq and ord build the server expression holding
// its DET or OPE ciphertext (recording the Need); nil when the operand has
// no such form.
type operand struct {
	c       *encCol
	eq, ord func() (*pg_query.Node, error)
	desc    string
}

// predicate rewrites a condition in place (n may be nil).
func (q *planner) predicate(n *pg_query.Node, sc *scope, pc predCtx) error {
	if n == nil || n.Node == nil {
		return nil
	}
	switch x := n.Node.(type) {
	case *pg_query.Node_BoolExpr:
		inner := pc
		if x.BoolExpr.Boolop != pg_query.BoolExprType_AND_EXPR {
			inner.conj = false
		}
		stop := shortCircuit(x.BoolExpr.Boolop, x.BoolExpr.Args)
		for i, a := range x.BoolExpr.Args {
			if err := q.predicate(a, sc, inner); err != nil {
				var fe *foldError
				if i > stop && stop >= 0 && errors.As(err, &fe) {
					x.BoolExpr.Args = x.BoolExpr.Args[:i] // folded away unread
					break
				}
				return err
			}
		}
		return nil
	case *pg_query.Node_AExpr:
		return q.aexpr(n, x.AExpr, sc, pc)
	case *pg_query.Node_NullTest:
		op, err := q.operand(x.NullTest.Arg, sc, pc)
		if err != nil || op == nil {
			if err == nil {
				err = q.plainExpr(x.NullTest.Arg, sc, pc.construct)
			}
			return err
		}
		if op.c != nil && op.desc == op.c.name() {
			// Nullness shows at every layer: no peeling needed.
			x.NullTest.Arg = op.c.presence()
			return nil
		}
		e, err := op.anyForm()
		if err != nil {
			return err
		}
		x.NullTest.Arg = e
		return nil
	case *pg_query.Node_SubLink:
		return q.sublink(x.SubLink, sc, pc)
	case *pg_query.Node_ColumnRef:
		// A boolean column as a condition (WHERE flag, NOT flag) is
		// flag = true, which has the same truth value, NULL included.
		if c, err := sc.resolve(x.ColumnRef, pc.construct); err == nil && c != nil {
			if t, err := ColumnType(c.col); err == nil && t.Base == onion.Boolean {
				eq := &pg_query.A_Expr{Kind: pg_query.A_Expr_Kind_AEXPR_OP, Name: []*pg_query.Node{pg_query.MakeStrNode("=")},
					Lexpr: &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: x.ColumnRef}},
					Rexpr: &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Boolval{Boolval: &pg_query.Boolean{Boolval: true}}, Location: -1}}}, Location: -1}
				n.Node = &pg_query.Node_AExpr{AExpr: eq}
				return q.aexpr(n, eq, sc, pc)
			}
		}
	}
	return q.plainExpr(n, sc, pc.construct)
}

// anyForm returns the operand's DET form, else its OPE form.
func (op *operand) anyForm() (*pg_query.Node, error) {
	if op.eq != nil {
		return op.eq()
	}
	return op.ord()
}

var comparisonOps = map[string]bool{"=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true}

// flip is the operator seen from the other side (5 < c is c > 5).
func flip(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}

func (q *planner) aexpr(n *pg_query.Node, e *pg_query.A_Expr, sc *scope, pc predCtx) error {
	names := stringList(e.Name)
	op := ""
	if len(names) == 1 {
		op = names[0]
	}
	switch e.Kind {
	case pg_query.A_Expr_Kind_AEXPR_OP, pg_query.A_Expr_Kind_AEXPR_DISTINCT, pg_query.A_Expr_Kind_AEXPR_NOT_DISTINCT:
		if e.Lexpr == nil || !comparisonOps[op] {
			break
		}
		if e.Kind != pg_query.A_Expr_Kind_AEXPR_OP && op != "=" {
			break
		}
		l, err := q.operand(e.Lexpr, sc, pc)
		if err != nil {
			return err
		}
		r, err := q.operand(e.Rexpr, sc, pc)
		if err != nil {
			return err
		}
		switch {
		case l == nil && r == nil:
		case l != nil && r != nil:
			return q.compareOperands(e, l, r, op, pc)
		case l != nil:
			return q.compareValue(e, l, &e.Rexpr, op, sc, pc)
		default:
			return q.compareValue(e, r, &e.Lexpr, flip(op), sc, pc)
		}
	case pg_query.A_Expr_Kind_AEXPR_IN:
		l, err := q.operand(e.Lexpr, sc, pc)
		if err != nil {
			return err
		}
		if l == nil {
			break
		}
		list := e.Rexpr.GetList()
		if list == nil {
			break
		}
		if l.eq == nil {
			return Refusal("IN over %s in %s is not supported", l.desc, pc.construct)
		}
		for i, v := range list.Items {
			v, err := foldValue(v)
			if err != nil {
				return err
			}
			if !isValue(v) {
				return Refusal("IN list of encrypted column %s in %s: only constants, parameters and NULL are supported", l.desc, pc.construct)
			}
			h, err := q.hole(l.c, HoleDET, "=", v)
			if err != nil {
				return err
			}
			list.Items[i] = h
		}
		x, err := l.eq()
		if err != nil {
			return err
		}
		e.Lexpr = x
		return nil
	case pg_query.A_Expr_Kind_AEXPR_OP_ANY, pg_query.A_Expr_Kind_AEXPR_OP_ALL:
		l, err := q.operand(e.Lexpr, sc, pc)
		if err != nil {
			return err
		}
		if l == nil {
			break
		}
		return q.anyArray(n, e, l, op, pc)
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		l, err := q.operand(e.Lexpr, sc, pc)
		if err != nil {
			return err
		}
		if l == nil {
			break
		}
		list := e.Rexpr.GetList()
		if list != nil {
			for i, it := range list.Items {
				f, err := foldValue(it)
				if err != nil {
					return err
				}
				list.Items[i] = f
			}
		}
		if list == nil || len(list.Items) != 2 || !isValue(list.Items[0]) || !isValue(list.Items[1]) {
			return Refusal("BETWEEN over encrypted column %s in %s: only constants and parameters are supported as bounds", l.desc, pc.construct)
		}
		if l.c != nil && isText(l.c) && l.desc == l.c.name() {
			if e.Kind == pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN {
				return Refusal("NOT BETWEEN on encrypted text column %s in %s is not supported", l.desc, pc.construct)
			}
			return q.textBetween(e, l, list, pc)
		}
		if l.ord == nil {
			return Refusal("BETWEEN over %s in %s is not supported", l.desc, pc.construct)
		}
		lo, err := q.hole(l.c, HoleOPE, ">=", list.Items[0])
		if err != nil {
			return err
		}
		hi, err := q.hole(l.c, HoleOPE, "<=", list.Items[1])
		if err != nil {
			return err
		}
		list.Items[0], list.Items[1] = lo, hi
		x, err := l.ord()
		if err != nil {
			return err
		}
		e.Lexpr = x
		return nil
	case pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
		if c, err := q.firstEncrypted(e.Lexpr, sc, pc.construct); err != nil || c != nil {
			if err == nil {
				err = Refusal("BETWEEN SYMMETRIC over encrypted column %s in %s is not supported", c.name(), pc.construct)
			}
			return err
		}
	case pg_query.A_Expr_Kind_AEXPR_LIKE, pg_query.A_Expr_Kind_AEXPR_ILIKE:
		l, err := q.operand(e.Lexpr, sc, pc)
		if err != nil {
			return err
		}
		if l == nil {
			break
		}
		return q.like(n, e, l, op, sc, pc)
	}
	return q.plainExpr(n, sc, pc.construct)
}

// anyArray rewrites c = ANY(array) and c <> ALL(array) over encrypted
// operand l, both on the Eq onion: ARRAY[a, b] as the list IN (a, b)
// (NOT IN for <> ALL), which means the same, NULLs included; an array
// constant or parameter as one hole the proxy fills with the elements'
// ciphertexts.
func (q *planner) anyArray(n *pg_query.Node, e *pg_query.A_Expr, l *operand, op string, pc predCtx) error {
	form := "ANY"
	if e.Kind == pg_query.A_Expr_Kind_AEXPR_OP_ALL {
		form = "ALL"
	}
	if op != "=" && op != "<>" || (op == "=") != (form == "ANY") || l.eq == nil {
		return Refusal("%s %s (array) over %s in %s is not supported: only = ANY and <> ALL are", op, form, l.desc, pc.construct)
	}
	if ae := e.Rexpr.GetAArrayExpr(); ae != nil && len(ae.Elements) > 0 {
		if err := untypedArray(ae, l.c); err != nil {
			return err
		}
		if err := checkArrayLiterals(ae); err != nil {
			return err
		}
		items := make([]*pg_query.Node, len(ae.Elements))
		for i, v := range ae.Elements {
			v, err := foldValue(v)
			if err != nil {
				return err
			}
			if !isValue(v) {
				return Refusal("ARRAY[...] compared with encrypted column %s in %s: only constants, parameters and NULL are supported as elements", l.desc, pc.construct)
			}
			if items[i], err = q.hole(l.c, HoleDET, "=", v); err != nil {
				return err
			}
		}
		x, err := l.eq()
		if err != nil {
			return err
		}
		n.Node = &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{Kind: pg_query.A_Expr_Kind_AEXPR_IN, Name: []*pg_query.Node{pg_query.MakeStrNode(op)},
			Lexpr: x, Rexpr: &pg_query.Node{Node: &pg_query.Node_List{List: &pg_query.List{Items: items}}}, Location: e.Location}}
		q.done(n)
		return nil
	}
	v, elemType := e.Rexpr, ""
	if tc := v.GetTypeCast(); tc != nil {
		names := stringList(tc.TypeName.GetNames())
		if len(tc.TypeName.ArrayBounds) != 1 || len(tc.TypeName.Typmods) > 0 || len(names) == 0 {
			return Refusal("%s (%s) compared with encrypted column %s in %s is not supported: cast the array to an array type without modifiers", form, deparseType(tc.TypeName), l.desc, pc.construct)
		}
		v, elemType = tc.Arg, names[len(names)-1]
	}
	h := CmpHole{Table: l.c.table, Column: l.c.col, Kind: HoleDETArray, Op: "=", ConstType: elemType}
	switch {
	case v.GetParamRef() != nil:
		h.Param = int(v.GetParamRef().Number)
	case v.GetAConst() != nil && v.GetAConst().Isnull:
	case v.GetAConst() != nil && v.GetAConst().GetSval() != nil:
		s := v.GetAConst().GetSval().Sval
		h.Const = &s
	default:
		return Refusal("%s (...) compared with encrypted column %s in %s: only ARRAY[...] of constants and parameters, an array constant or an array parameter are supported", form, l.desc, pc.construct)
	}
	x, err := l.eq()
	if err != nil {
		return err
	}
	h.node = &pg_query.Node{Node: nullConst().Node}
	q.plan.Holes = append(q.plan.Holes, h)
	e.Lexpr, e.Rexpr = x, h.node
	q.done(n)
	return nil
}

// untypedArray fails as PostgreSQL does for ARRAY[...] of quoted literals
// and NULLs only, which is text[] (unlike an IN list, whose literals take
// the column's type), compared with a column of another type than text.
func untypedArray(ae *pg_query.A_ArrayExpr, c *encCol) error {
	for _, v := range ae.Elements {
		if k := v.GetAConst(); k == nil || !k.Isnull && k.GetSval() == nil {
			return nil
		}
	}
	t, err := parseType(c.col.Type)
	if err != nil {
		return err
	}
	switch t.Base {
	case onion.Text, onion.Varchar, onion.Char:
		return nil
	}
	return &pgconn.PgError{Severity: "ERROR", Code: "42883",
		Message: fmt.Sprintf("operator does not exist: %s = text", t.BaseName()),
		Hint:    "No operator matches the given name and argument types. You might need to add explicit type casts."}
}

// compareOperands rewrites a comparison of two encrypted operands (a
// join condition, or a column against a subquery's result).
func (q *planner) compareOperands(e *pg_query.A_Expr, l, r *operand, op string, pc predCtx) error {
	if g := l.c.col.JoinGroup; g != "" && g == r.c.col.JoinGroup && !sameKeys(l.c, r.c) {
		return Refusal("comparing encrypted columns %s and %s in %s is not supported now: they are in join group %s at different keys (%s and %s): a rotation of the group's keys is under way or unfinished; rotate the keys of its other tables too (proxy keys rotate)", l.c.name(), r.c.name(), pc.construct, g, l.c.col.GroupKey(), r.c.col.GroupKey())
	}
	if !sameKeys(l.c, r.c) {
		refusal := Refusal("comparing encrypted columns %s and %s in %s is not supported: they are encrypted under different keys; declare them in one join group (proxy columns set --join-group)", l.c.name(), r.c.name(), pc.construct)
		if rk := rekeyFor(l.c, r.c, op, refusal); rk != nil {
			return rk
		}
		return refusal
	}
	var lf, rf func() (*pg_query.Node, error)
	lt, lerr := parseType(l.c.col.Type)
	rt, rerr := parseType(r.c.col.Type)
	if lerr != nil || rerr != nil {
		return Refusal("comparing %s and %s in %s is not supported", l.c.name(), r.c.name(), pc.construct)
	}
	if op == "=" || op == "<>" {
		lf, rf = l.eq, r.eq
		if lf == nil || rf == nil {
			lf, rf = l.ord, r.ord
		}
		if l.c.col.ID != r.c.col.ID && !onion.EqJoinable(lt, rt) {
			return Refusal("comparing %s and %s with %s in %s is not supported: their types (%s, %s) do not compare on one key", l.c.name(), r.c.name(), op, pc.construct, l.c.col.Type, r.c.col.Type)
		}
	} else {
		lf, rf = l.ord, r.ord
		if l.c.col.ID != r.c.col.ID && !onion.OrdJoinable(lt, rt) {
			return Refusal("comparing %s and %s with %s in %s is not supported: their types (%s, %s) do not compare on one key", l.c.name(), r.c.name(), op, pc.construct, l.c.col.Type, r.c.col.Type)
		}
	}
	if lf == nil || rf == nil {
		return Refusal("comparing %s with %s using %s in %s is not supported", l.desc, r.desc, op, pc.construct)
	}
	x, err := lf()
	if err != nil {
		return err
	}
	y, err := rf()
	if err != nil {
		return err
	}
	e.Lexpr, e.Rexpr = x, y
	return nil
}

func parseBase(c *encCol) onion.Base {
	t, err := parseType(c.col.Type)
	if err != nil {
		return 0
	}
	return t.Base
}

// compareValue rewrites "operand op value" (value on either side, op seen
// from the operand).
func (q *planner) compareValue(e *pg_query.A_Expr, l *operand, v **pg_query.Node, op string, sc *scope, pc predCtx) error {
	folded, err := foldValue(*v)
	if err != nil {
		return err
	}
	*v = folded
	if !isValue(*v) {
		if c, err := q.firstEncrypted(*v, sc, pc.construct); err != nil || c != nil {
			if err == nil {
				err = Refusal("comparing %s with an expression over encrypted column %s in %s is not supported", l.desc, c.name(), pc.construct)
			}
			return err
		}
		return Refusal("comparing encrypted column %s with an expression in %s is not supported: only constants, parameters and encrypted columns of its join group", l.desc, pc.construct)
	}
	kind, form := HoleDET, l.eq
	if op != "=" && op != "<>" || l.eq == nil {
		kind, form = HoleOPE, l.ord
	}
	if kind == HoleOPE && isText(l.c) {
		return q.textRange(e, l, v, op, pc)
	}
	if form == nil {
		return Refusal("comparing %s with %s in %s is not supported", l.desc, op, pc.construct)
	}
	h, err := q.hole(l.c, kind, op, *v)
	if err != nil {
		return err
	}
	x, err := form()
	if err != nil {
		return err
	}
	*v = h
	if e.Lexpr == h {
		e.Rexpr = x
	} else {
		e.Lexpr = x
	}
	return nil
}

func isText(c *encCol) bool {
	switch parseBase(c) {
	case onion.Text, onion.Varchar, onion.Char:
		return true
	}
	return false
}

// operand returns the encrypted operand n is, nil for anything else.
// Plain subqueries it meets are rewritten (and then reported as nil too,
// with plain set): the caller must not walk them again.
func (q *planner) operand(n *pg_query.Node, sc *scope, pc predCtx) (*operand, error) {
	if n == nil {
		return nil, nil
	}
	switch x := n.Node.(type) {
	case *pg_query.Node_ColumnRef:
		c, err := sc.resolve(x.ColumnRef, pc.construct)
		if err != nil || c == nil {
			return nil, err
		}
		return q.columnOperand(c), nil
	case *pg_query.Node_FuncCall:
		if !pc.agg {
			return nil, nil
		}
		return q.aggOperand(x.FuncCall, sc, pc.construct)
	case *pg_query.Node_SubLink:
		sl := x.SubLink
		if sl.SubLinkType != pg_query.SubLinkType_EXPR_SUBLINK {
			return nil, nil
		}
		sel := sl.Subselect.GetSelectStmt()
		inner, err := q.selectLevel(sel, sc, modeOperand)
		if err != nil {
			return nil, err
		}
		sl.Subselect = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}
		if inner == nil {
			// Rewritten as a plain subquery: mark it so it is not
			// walked again.
			q.done(n)
			return nil, nil
		}
		wrap := func(f func() (*pg_query.Node, error)) func() (*pg_query.Node, error) {
			if f == nil {
				return nil
			}
			return func() (*pg_query.Node, error) {
				e, err := f()
				if err != nil {
					return nil, err
				}
				sel.TargetList[0].GetResTarget().Val = e
				return n, nil
			}
		}
		return &operand{c: inner.c, eq: wrap(inner.eq), ord: wrap(inner.ord), desc: "a subquery returning " + inner.desc}, nil
	}
	return nil, nil
}

// columnOperand is an encrypted column as an operand.
func (q *planner) columnOperand(c *encCol) *operand {
	op := &operand{c: c, desc: c.name()}
	op.eq = func() (*pg_query.Node, error) {
		if err := q.need(c, onion.KindEq); err != nil {
			return nil, err
		}
		return c.ref("_eq"), nil
	}
	if hasCapability(c.col, onion.KindOrd) && !isText(c) {
		op.ord = func() (*pg_query.Node, error) {
			if err := q.need(c, onion.KindOrd); err != nil {
				return nil, err
			}
			return c.ref("_ord"), nil
		}
	} else if !isText(c) {
		op.ord = func() (*pg_query.Node, error) {
			return nil, q.need(c, onion.KindOrd) // refuses: no Ord onion
		}
	}
	return op
}

// aggOperand is MIN or MAX of an encrypted column as an operand (HAVING,
// or the output of a scalar subquery); nil for other calls.
func (q *planner) aggOperand(fc *pg_query.FuncCall, sc *scope, construct string) (*operand, error) {
	name := funcName(fc)
	if (name != "min" && name != "max") || len(fc.Args) != 1 || fc.Over != nil {
		return nil, nil
	}
	cr := fc.Args[0].GetColumnRef()
	if cr == nil {
		return nil, nil
	}
	c, err := sc.resolve(cr, construct)
	if err != nil || c == nil {
		return nil, err
	}
	switch parseBase(c) {
	case onion.Boolean, onion.Bytea, onion.UUID:
		// PostgreSQL has no MIN or MAX for these types either.
		typ := map[onion.Base]string{onion.Boolean: "boolean", onion.Bytea: "bytea", onion.UUID: "uuid"}[parseBase(c)]
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "42883", Message: fmt.Sprintf("function %s(%s) does not exist", name, typ),
			Hint: "No function matches the given name and argument types. You might need to add explicit type casts."}
	}
	if isText(c) {
		return nil, Refusal("%s of encrypted text column %s in %s is not supported yet", name, c.name(), construct)
	}
	if fc.AggFilter != nil && !q.isDone(fc.AggFilter) {
		if err := q.predicate(fc.AggFilter, sc, predCtx{construct: "FILTER"}); err != nil {
			return nil, err
		}
		q.done(fc.AggFilter)
	}
	return &operand{c: c, desc: name + "(" + c.name() + ")", ord: func() (*pg_query.Node, error) {
		if err := q.need(c, onion.KindOrd); err != nil {
			return nil, err
		}
		// PostgreSQL has no MIN and MAX for bytea: pgonion's aggregates
		// (migration 0005) compare the OPE ciphertexts as bytes.
		fc.Funcname = []*pg_query.Node{pg_query.MakeStrNode("pgonion"), pg_query.MakeStrNode(name)}
		fc.Args[0] = c.ref("_ord")
		fc.AggDistinct = false
		return &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: fc}}, nil
	}}, nil
}

func funcName(fc *pg_query.FuncCall) string {
	names := stringList(fc.Funcname)
	if len(names) == 2 && names[0] == "pg_catalog" {
		return names[1]
	}
	if len(names) == 1 {
		return names[0]
	}
	return ""
}

// sublink rewrites a subquery used as a condition.
func (q *planner) sublink(sl *pg_query.SubLink, sc *scope, pc predCtx) error {
	sel := sl.Subselect.GetSelectStmt()
	if sel == nil {
		return nil
	}
	switch sl.SubLinkType {
	case pg_query.SubLinkType_EXISTS_SUBLINK:
		_, err := q.selectLevel(sel, sc, modeExists)
		return err
	case pg_query.SubLinkType_ANY_SUBLINK, pg_query.SubLinkType_ALL_SUBLINK:
		l, err := q.operand(sl.Testexpr, sc, pc)
		if err != nil {
			return err
		}
		if l == nil {
			if err := q.plainExpr(sl.Testexpr, sc, pc.construct); err != nil {
				return err
			}
			_, err := q.selectLevel(sel, sc, modePlain)
			return err
		}
		op := "="
		if names := stringList(sl.OperName); len(names) == 1 {
			op = names[0]
		}
		inner, err := q.selectLevel(sel, sc, modeOperand)
		if err != nil {
			return err
		}
		if inner == nil {
			return Refusal("comparing encrypted column %s with the plaintext result of a subquery in %s is not supported", l.desc, pc.construct)
		}
		e := &pg_query.A_Expr{}
		if err := q.compareOperands(e, l, inner, op, pc); err != nil {
			return err
		}
		sl.Testexpr = e.Lexpr
		sel.TargetList[0].GetResTarget().Val = e.Rexpr
		return nil
	}
	_, err := q.selectLevel(sel, sc, modePlain)
	return err
}

// like rewrites a LIKE or ILIKE over an encrypted column: a search-token
// prefilter (or nothing) on the server, the exact pattern in the proxy.
func (q *planner) like(n *pg_query.Node, e *pg_query.A_Expr, l *operand, op string, sc *scope, pc predCtx) error {
	c := l.c
	if c == nil || l.desc != c.name() {
		return Refusal("%s over %s in %s is not supported", op, l.desc, pc.construct)
	}
	if !isText(c) {
		return Refusal("LIKE on encrypted column %s of type %s is not supported", c.name(), c.col.Type)
	}
	if !pc.conj {
		return Refusal("LIKE on encrypted column %s is only supported in conditions of the outermost query's WHERE joined by AND, where the proxy can drop rows (not under OR or NOT, nor in subqueries, JOIN ... ON, HAVING or CASE; here: %s)", c.name(), pc.construct)
	}
	check, pat, err := readLike(e)
	if err != nil {
		return Refusal("LIKE on encrypted column %s: only a constant ESCAPE is supported", c.name())
	}
	if !isValue(pat) {
		return Refusal("LIKE on encrypted column %s: only a constant or parameter pattern is supported", c.name())
	}
	h := Hole{Column: c.col}
	if err := holeValue(pat, &h, c.table.Name, "LIKE on"); err != nil {
		return err
	}
	check.Const, check.Param = h.Const, h.Param
	col := q.hiddenValue(c, true)
	q.plan.Residuals = append(q.plan.Residuals, Residual{Column: col, Like: check})
	if !check.Negate && !hasCapability(c.col, onion.KindSearch) && slices.Contains(c.col.Capabilities, string(onion.KindSearch)) && c.col.Policy == catalog.Encrypted {
		q.plan.Wants = append(q.plan.Wants, Need{Table: c.table, Column: c.col, Kind: onion.KindSearch, Layer: onion.LayerSearch})
	}
	if !check.Negate && hasCapability(c.col, onion.KindSearch) {
		tokens := CmpHole{Table: c.table, Column: c.col, Kind: HoleTokens, Const: check.Const, Param: check.Param,
			Like: check, node: &pg_query.Node{Node: nullConst().Node}}
		q.plan.Holes = append(q.plan.Holes, tokens)
		n.Node = (&pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{
			Kind: pg_query.A_Expr_Kind_AEXPR_OP, Name: []*pg_query.Node{pg_query.MakeStrNode("@>")},
			Lexpr: c.ref("_srch"), Rexpr: tokens.node, Location: -1}}}).Node
		return nil
	}
	// No prefilter: LIKE and NOT LIKE are NULL on NULL, so only the
	// nullness is tested on the server.
	n.Node = (&pg_query.Node{Node: &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{Arg: c.ref("_eq"), Nulltesttype: pg_query.NullTestType_IS_NOT_NULL}}}).Node
	return nil
}

// plainExpr checks an expression that must not touch encrypted columns,
// rewriting the subqueries in it (whose own conditions may).
func (q *planner) plainExpr(n *pg_query.Node, sc *scope, construct string) error {
	if n == nil {
		return nil
	}
	var err error
	inspect(n.ProtoReflect(), func(m protoreflect.Message) bool {
		if err != nil {
			return false
		}
		switch x := m.Interface().(type) {
		case *pg_query.Node:
			if q.isDone(x) {
				return false
			}
		case *pg_query.ColumnRef:
			var c *encCol
			if c, err = sc.resolve(x, construct); err == nil && c != nil {
				err = Refusal("%s on encrypted column %s in an expression is not supported", construct, c.name())
			}
			if err == nil {
				err = wholeRow(x, sc, construct)
			}
			return false
		case *pg_query.CaseExpr:
			err = q.caseExpr(x, sc, construct)
			return false
		case *pg_query.SubLink:
			if sel := x.Subselect.GetSelectStmt(); sel != nil {
				mode := modePlain
				if x.SubLinkType == pg_query.SubLinkType_EXISTS_SUBLINK {
					mode = modeExists
				}
				if _, err = q.selectLevel(sel, sc, mode); err != nil {
					return false
				}
			}
			if x.Testexpr != nil {
				err = q.plainExpr(x.Testexpr, sc, construct)
			}
			return false
		}
		return true
	})
	return err
}

// caseExpr rewrites a CASE whose WHEN conditions may compare encrypted
// columns: a condition is rewritten like a WHERE (its value is a boolean
// the server computes over the onions); the results, the ELSE and the
// argument of a simple CASE must be plaintext.
func (q *planner) caseExpr(ce *pg_query.CaseExpr, sc *scope, construct string) error {
	if err := q.plainExpr(ce.Arg, sc, construct); err != nil {
		return err
	}
	for _, w := range ce.Args {
		cw := w.GetCaseWhen()
		if cw == nil {
			continue
		}
		if ce.Arg != nil {
			// CASE x WHEN v: v is compared with x, a plaintext value.
			if err := q.plainExpr(cw.Expr, sc, construct); err != nil {
				return err
			}
		} else if err := q.predicate(cw.Expr, sc, predCtx{construct: "CASE WHEN"}); err != nil {
			return err
		}
		if err := q.plainExpr(cw.Result, sc, construct); err != nil {
			return err
		}
	}
	return q.plainExpr(ce.Defresult, sc, construct)
}

// firstEncrypted returns an encrypted column n references directly (not
// in subqueries), or nil.
func (q *planner) firstEncrypted(n *pg_query.Node, sc *scope, construct string) (*encCol, error) {
	if n == nil {
		return nil, nil
	}
	var found *encCol
	var err error
	inspect(n.ProtoReflect(), func(m protoreflect.Message) bool {
		if found != nil || err != nil {
			return false
		}
		switch x := m.Interface().(type) {
		case *pg_query.ColumnRef:
			found, err = sc.resolve(x, construct)
			return false
		case *pg_query.SubLink:
			return false
		}
		return true
	})
	return found, err
}

// wholeRow refuses t.* and t as values when t has encrypted columns.
func wholeRow(cr *pg_query.ColumnRef, sc *scope, construct string) error {
	f := cr.Fields
	if len(f) >= 2 && f[len(f)-1].GetAStar() != nil {
		if it := sc.item(fieldName(f[len(f)-2])); it != nil && (it.table != nil || it.derived != nil) {
			return Refusal("whole-row reference %s.* to %s with encrypted columns in %s is not supported", it.qualifier, it.describe(), construct)
		}
	}
	return nil
}

// done marks a node already rewritten, isDone asks.
func (q *planner) done(n *pg_query.Node) {
	if q.finished == nil {
		q.finished = map[*pg_query.Node]bool{}
	}
	q.finished[n] = true
}

func (q *planner) isDone(n *pg_query.Node) bool { return q.finished[n] }

// shortCircuit returns the index of the first literal true among the
// arguments of an OR (false of an AND), or -1. PostgreSQL's planner folds
// the arguments after it away unread (simplify_or_arguments): their
// constant errors (9223372036854775807 + 1) are never raised, though
// type errors are, by parse analysis before.
func shortCircuit(op pg_query.BoolExprType, args []*pg_query.Node) int {
	if op == pg_query.BoolExprType_NOT_EXPR {
		return -1
	}
	stop := op == pg_query.BoolExprType_OR_EXPR
	for i, a := range args {
		if b := a.GetAConst().GetBoolval(); b != nil && !a.GetAConst().Isnull && b.Boolval == stop {
			return i
		}
	}
	return -1
}
