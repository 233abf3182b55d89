package engine

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pglike"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// evaluator computes the expressions of one split execution.
type evaluator struct {
	in     []onion.Type // the input columns' types
	env    onion.Env
	consts map[*ir.Expr]aval
	// patterns are the LIKE patterns, compiled once (per copy: maps are
	// not shared between workers).
	patterns map[*ir.Like]*pglike.Pattern
	// rowPatterns are the patterns computed per row (rowPattern).
	rowPatterns map[*ir.Like]compiledPattern
	aggs        map[*ir.Expr]int // aggregate -> index of its state
	wins        map[*ir.Expr]int // window function -> index of its values (window.go)
	// lookups are the decorrelated subqueries' values, read-only once
	// built (shared by the workers).
	lookups map[*ir.Lookup]*lookupTable
	sigs    map[*ir.Expr]*callSig // typed function calls (scalar.go)
	// refused is the first call the scalar library refused, for the
	// message.
	refused *ir.Expr
	// clock gives the current time (scalarclock.go); nil where none is
	// known, which refuses the functions reading it.
	clock *serverClock
}

// scope is what expressions read: the inputs of one row (the group's
// first row, for grouped expressions), and the group's aggregates.
type scope struct {
	row  []aval
	aggs []aval
	wins []aval // the row's window function values
}

// typeOf is the type of e's values.
func (ev *evaluator) typeOf(e *ir.Expr) (onion.Type, error) {
	switch e.Kind {
	case ir.ExprInput:
		return ev.in[e.Input], nil
	case ir.ExprConst:
		v, err := ev.constant(e, nil)
		return v.t, err
	case ir.ExprLike:
		if !isUnknown(e.Args[0]) {
			t, err := ev.typeOf(e.Args[0])
			if err != nil {
				return tBool, err
			}
			if k, _ := kindOf(t); k != kText {
				if ev.refused == nil {
					ev.refused = e
				}
				return tBool, rewrite.Refusal("LIKE over a value of type %s is not supported in a query the proxy computes", t)
			}
		}
		return tBool, nil
	case ir.ExprBool, ir.ExprNullTest, ir.ExprIn:
		return tBool, nil
	case ir.ExprOp:
		if e.Op == "neg" {
			return ev.typeOf(e.Args[0])
		}
		switch e.Op {
		case "=", "<>", "<", "<=", ">", ">=":
			return tBool, nil
		case "||":
			_, err := ev.concatTypes(e)
			return tText, err
		}
		a, b, err := ev.operandTypes(e.Args[0], e.Args[1])
		if err != nil {
			return onion.Type{}, err
		}
		if v, ok, err := timeArith(e.Op, nullOf(a), nullOf(b), ev.env); ok {
			return v.t, err
		}
		v, err := arith(e.Op, nullOf(a), nullOf(b))
		return v.t, err
	case ir.ExprCase:
		var t *onion.Type
		for i := 1; i < len(e.Args); i += 2 {
			if err := ev.unify(&t, e.Args[i]); err != nil {
				return onion.Type{}, err
			}
		}
		if e.Else != nil {
			if err := ev.unify(&t, e.Else); err != nil {
				return onion.Type{}, err
			}
		}
		if t == nil {
			return tText, nil
		}
		return *t, nil
	case ir.ExprAgg:
		if e.Star || e.Func == "count" {
			return tInt8, nil
		}
		t, err := ev.typeOf(e.Args[0])
		if err != nil {
			return t, err
		}
		k, err := kindOf(t)
		if err != nil {
			return t, err
		}
		switch e.Func {
		case "sum":
			switch {
			case k == kInt && t.Base != onion.BigInt:
				return tInt8, nil
			case k == kInt || k == kNumeric:
				return tNumeric, nil
			case k == kFloat:
				return tFloat8, nil
			case k == kIntv:
				return tInterval, nil
			}
			return t, rewrite.Refusal("sum of %s is not supported", t)
		case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
			switch k {
			case kFloat:
				return tFloat8, nil
			case kInt, kNumeric:
				return tNumeric, nil
			}
			return t, rewrite.Refusal("%s of %s is not supported", e.Func, t)
		case "avg":
			if k == kFloat {
				return tFloat8, nil
			}
			if k == kIntv {
				return tInterval, nil
			}
			if k != kInt && k != kNumeric {
				return t, rewrite.Refusal("avg of %s is not supported", t)
			}
			return tNumeric, nil
		}
		if t.Base == onion.Varchar {
			return tText, nil // min and max of text: varchar has none of its own
		}
		return t, nil // min, max
	case ir.ExprFunc:
		sig, err := ev.signature(e)
		if err != nil {
			return onion.Type{}, err
		}
		return sig.result, nil
	case ir.ExprLookup:
		return ev.lookupType(e)
	case ir.ExprWindow:
		return ev.windowType(e)
	}
	return onion.Type{}, rewrite.Refusal("this expression is not supported in a query the proxy computes")
}

// unify folds the type of e into t (CASE branches) by commonType; NULL
// constants and untyped literals do not count (they take the others'
// type, text when all are such).
func (ev *evaluator) unify(t **onion.Type, e *ir.Expr) error {
	if e.Kind == ir.ExprConst && (e.Const == nil || isUnknown(e)) {
		return nil
	}
	x, err := ev.typeOf(e)
	if err != nil {
		return err
	}
	if *t == nil {
		*t = &x
		return nil
	}
	c, ok := commonType(**t, x)
	if !ok {
		return rewrite.Refusal("CASE mixes %s and %s", **t, x)
	}
	*t = &c
	return nil
}

// operandTypes types two operands, an unknown literal taking the other's.
func (ev *evaluator) operandTypes(a, b *ir.Expr) (onion.Type, onion.Type, error) {
	if isUnknown(a) && !isUnknown(b) {
		tb, err := ev.typeOf(b)
		if err != nil {
			return tb, tb, err
		}
		v, err := ev.constant(a, &tb)
		return v.t, tb, err
	}
	ta, err := ev.typeOf(a)
	if err != nil {
		return ta, ta, err
	}
	if isUnknown(b) {
		v, err := ev.constant(b, &ta)
		return ta, v.t, err
	}
	tb, err := ev.typeOf(b)
	return ta, tb, err
}

func isUnknown(e *ir.Expr) bool { return e.Kind == ir.ExprConst && e.ConstType == "" }

// constant is a constant's value, cached (typed by want when unknown).
func (ev *evaluator) constant(e *ir.Expr, want *onion.Type) (aval, error) {
	if v, ok := ev.consts[e]; ok && (want == nil || !isUnknown(e) || v.t.Base == want.Base) {
		return v, nil
	}
	v, err := constValue(e, want, ev.env)
	if err != nil {
		return v, err
	}
	if ev.consts == nil {
		ev.consts = map[*ir.Expr]aval{}
	}
	ev.consts[e] = v
	return v, nil
}

// plan checks, before any row is read, that e is typed (every operator
// and function exists for its argument types) and that its constant
// parts evaluate: the errors PostgreSQL raises when it plans.
func (ev *evaluator) plan(e *ir.Expr) error {
	var bad error
	walkExpr(e, func(x *ir.Expr) {
		if _, err := ev.typeOf(x); err != nil && bad == nil {
			bad = err
		}
	})
	if bad != nil {
		return bad
	}
	return ev.checkConstants(e)
}

// checkConstants evaluates, once, every subexpression of e that reads no
// row (constants and operators over them): PostgreSQL types and folds
// those when it plans the statement, so their errors (an operator that
// does not exist, a literal out of its type's range, a division by zero)
// fail the statement even where evaluation would never reach them.
func (ev *evaluator) checkConstants(e *ir.Expr) error {
	if e == nil || e.Kind == ir.ExprCase {
		// PostgreSQL drops the arms of a CASE whose condition folds to
		// false without folding them: left to evaluation.
		return nil
	}
	if constantExpr(e) && e.Kind == ir.ExprOp {
		_, err := ev.eval(e, &scope{})
		if err != nil && !isRefusal(err) {
			return err
		}
		return nil
	}
	folded := false
	for _, x := range e.Args {
		err := ev.checkConstants(x)
		var pe *pgconn.PgError
		if folded && errors.As(err, &pe) && !strings.Contains(pe.Message, `"`) {
			// PostgreSQL folds the rest of an OR after a literal true
			// (of an AND after false) away unread, so their arithmetic
			// errors are never raised; a literal that is not a value
			// of its type (value "..." is out of range) fails parse
			// analysis before. Evaluation stops there too.
			err = nil
		}
		if err != nil {
			return err
		}
		folded = folded || e.Kind == ir.ExprBool && e.Op != "NOT" && x.Kind == ir.ExprConst &&
			x.ConstType == "boolean" && x.Const != nil && (*x.Const == "true") == (e.Op == "OR")
	}
	return ev.checkConstants(e.Else)
}

// constantExpr reports whether e reads no row and no group.
func constantExpr(e *ir.Expr) bool {
	switch e.Kind {
	case ir.ExprInput, ir.ExprAgg, ir.ExprLookup, ir.ExprWindow:
		return false
	}
	for _, x := range e.Args {
		if !constantExpr(x) {
			return false
		}
	}
	return e.Else == nil || constantExpr(e.Else)
}

// pattern is l's constant pattern, compiled.
func (ev *evaluator) pattern(l *ir.Like) (*pglike.Pattern, error) {
	if p := ev.patterns[l]; p != nil {
		return p, nil
	}
	p, err := l.Compile(*l.Const, ev.env.CType)
	if err != nil {
		return nil, err
	}
	if ev.patterns == nil {
		ev.patterns = map[*ir.Like]*pglike.Pattern{}
	}
	ev.patterns[l] = p
	return p, nil
}

// eval computes e in sc.
func (ev *evaluator) eval(e *ir.Expr, sc *scope) (aval, error) {
	switch e.Kind {
	case ir.ExprInput:
		return sc.row[e.Input], nil
	case ir.ExprConst:
		return ev.constant(e, nil)
	case ir.ExprAgg:
		return sc.aggs[ev.aggs[e]], nil
	case ir.ExprWindow:
		return sc.wins[ev.wins[e]], nil
	case ir.ExprOp:
		if e.Op == "neg" {
			a, err := ev.eval(e.Args[0], sc)
			if err != nil {
				return a, err
			}
			if a.null {
				return a, nil
			}
			switch k, _ := kindOf(a.t); k {
			case kNumeric:
				return aval{t: a.t, d: a.d.Neg()}, nil
			case kFloat:
				return aval{t: a.t, i: a.i ^ math.MinInt64}, nil // -0 for 0, as float8um
			}
			return arith("-", aval{t: a.t}, a)
		}
		if e.Op == "||" {
			return ev.concat(e, sc)
		}
		a, b, err := ev.pair(e.Args[0], e.Args[1], sc)
		if err != nil {
			return a, err
		}
		switch e.Op {
		case "+", "-", "*", "/", "#", "&", "|":
			if v, ok, err := timeArith(e.Op, a, b, ev.env); ok {
				return v, err
			}
			return arith(e.Op, a, b)
		}
		if a.null || b.null {
			return nullOf(tBool), nil
		}
		a, b = ev.sameTimestamps(a, b)
		c, err := compare(a, b)
		if err != nil {
			return aval{}, err
		}
		return boolVal(compares(c, e.Op) || e.Op == "=" && c == 0 || e.Op == "<>" && c != 0), nil
	case ir.ExprBool:
		return ev.boolean(e, sc)
	case ir.ExprNullTest:
		a, err := ev.eval(e.Args[0], sc)
		if err != nil {
			return a, err
		}
		return boolVal(a.null == (e.Op == "IS NULL")), nil
	case ir.ExprLike:
		a, err := ev.eval(e.Args[0], sc)
		if err != nil || a.null || e.Like.Const == nil && len(e.Args) < 2 {
			return nullOf(tBool), err
		}
		if k, _ := kindOf(a.t); k != kText {
			return aval{}, rewrite.Refusal("LIKE over a value of type %s is not supported in a query the proxy computes", a.t)
		}
		var p *pglike.Pattern
		if len(e.Args) > 1 {
			p, err = ev.rowPattern(e, sc)
		} else {
			p, err = ev.pattern(e.Like)
		}
		if err != nil || p == nil {
			return nullOf(tBool), err
		}
		ok, err := p.Eval(a.text(ev.env))
		if err != nil {
			return aval{}, err
		}
		return boolVal(ok != e.Like.Negate), nil
	case ir.ExprIn:
		sawNull := false
		// The tested value is computed once, not once per item (unless
		// it is itself an untyped literal, which takes each item's type).
		var left aval
		leftOnce := !isUnknown(e.Args[0])
		if leftOnce {
			var err error
			if left, err = ev.eval(e.Args[0], sc); err != nil {
				return left, err
			}
		}
		for _, item := range e.Args[1:] {
			var a, b aval
			var err error
			switch {
			case !leftOnce:
				a, b, err = ev.pair(e.Args[0], item, sc)
			case isUnknown(item):
				a = left
				b, err = ev.constant(item, &a.t)
			default:
				a = left
				b, err = ev.eval(item, sc)
			}
			if err != nil {
				return a, err
			}
			if a.null || b.null {
				sawNull = true
				continue
			}
			a, b = ev.sameTimestamps(a, b)
			c, err := compare(a, b)
			if err != nil {
				return aval{}, err
			}
			if c == 0 {
				return boolVal(e.Op == "="), nil
			}
		}
		if sawNull {
			return nullOf(tBool), nil
		}
		return boolVal(e.Op != "="), nil
	case ir.ExprCase:
		t, err := ev.typeOf(e)
		if err != nil {
			return aval{}, err
		}
		for i := 0; i+1 < len(e.Args); i += 2 {
			c, err := ev.eval(e.Args[i], sc)
			if err != nil {
				return c, err
			}
			if !c.null && c.i != 0 {
				return ev.castTo(e.Args[i+1], t, sc)
			}
		}
		if e.Else == nil {
			return nullOf(t), nil
		}
		return ev.castTo(e.Else, t, sc)
	case ir.ExprFunc:
		return ev.call(e, sc)
	case ir.ExprLookup:
		return ev.lookup(e, sc)
	}
	return aval{}, rewrite.Refusal("this expression is not supported in a query the proxy computes")
}

// pair evaluates two operands, an unknown literal taking the other's type.
func (ev *evaluator) pair(x, y *ir.Expr, sc *scope) (aval, aval, error) {
	if isUnknown(x) && !isUnknown(y) {
		b, err := ev.eval(y, sc)
		if err != nil {
			return b, b, err
		}
		a, err := ev.constant(x, &b.t)
		return a, b, err
	}
	a, err := ev.eval(x, sc)
	if err != nil {
		return a, a, err
	}
	if isUnknown(y) {
		b, err := ev.constant(y, &a.t)
		return a, b, err
	}
	b, err := ev.eval(y, sc)
	return a, b, err
}

// castTo evaluates e as type t (a CASE branch), by convertTo.
func (ev *evaluator) castTo(e *ir.Expr, t onion.Type, sc *scope) (aval, error) {
	if isUnknown(e) {
		return ev.constant(e, &t) // an untyped literal is read as t
	}
	v, err := ev.eval(e, sc)
	if err != nil {
		return nullOf(t), err
	}
	return convertTo(v, t, ev.env), nil
}

// boolean is AND, OR and NOT with SQL's three-valued logic.
func (ev *evaluator) boolean(e *ir.Expr, sc *scope) (aval, error) {
	if e.Op == "NOT" {
		a, err := ev.eval(e.Args[0], sc)
		if err != nil || a.null {
			return nullOf(tBool), err
		}
		return boolVal(a.i == 0), nil
	}
	sawNull := false
	for _, x := range e.Args {
		a, err := ev.eval(x, sc)
		if err != nil {
			return a, err
		}
		switch {
		case a.null:
			sawNull = true
		case (a.i != 0) == (e.Op == "OR"):
			return boolVal(e.Op == "OR"), nil // short circuit
		}
	}
	if sawNull {
		return nullOf(tBool), nil
	}
	return boolVal(e.Op == "AND"), nil
}

func boolVal(b bool) aval {
	if b {
		return aval{t: tBool, i: 1}
	}
	return aval{t: tBool}
}

// concatTypes types the operands of x || y as PostgreSQL resolves it
// (textcat, anynonarray || text, text || anynonarray): an untyped
// literal is text, and one operand at least must be text.
func (ev *evaluator) concatTypes(e *ir.Expr) ([2]onion.Type, error) {
	var ts [2]onion.Type
	text := false
	for i, a := range e.Args[:2] {
		ts[i] = tText
		if !isUnknown(a) {
			t, err := ev.typeOf(a)
			if err != nil {
				return ts, err
			}
			ts[i] = t
			if t.Base == onion.Bytea {
				return ts, byteaTextRefusal("operator ||")
			}
		}
		text = text || isTextType(ts[i])
	}
	if !text {
		return ts, rewrite.Refusal("operator || between %s and %s is not supported in a query the proxy computes", ts[0], ts[1])
	}
	return ts, nil
}

// concat computes x || y: a non-text operand is cast to text
// (anynonarray || text).
func (ev *evaluator) concat(e *ir.Expr, sc *scope) (aval, error) {
	ts, err := ev.concatTypes(e)
	if err != nil {
		return aval{}, err
	}
	var vs [2]aval
	for i, a := range e.Args[:2] {
		if isUnknown(a) {
			vs[i], err = ev.constant(a, &ts[i])
		} else {
			vs[i], err = ev.eval(a, sc)
		}
		if err != nil {
			return aval{}, err
		}
		if vs[i].null {
			return nullOf(tText), nil
		}
		switch {
		case vs[i].t.Base == onion.Boolean:
			// The cast to text (anytextcat): booltext, not boolout.
			vs[i] = textVal(strconv.FormatBool(vs[i].i != 0))
		case !isTextType(vs[i].t):
			vs[i] = textVal(vs[i].text(ev.env))
		}
	}
	return arith("||", vs[0], vs[1])
}

// rowPattern is the pattern of LIKE e computed from the row (Args[1]),
// compiled once per distinct value; nil for NULL.
func (ev *evaluator) rowPattern(e *ir.Expr, sc *scope) (*pglike.Pattern, error) {
	var v aval
	var err error
	if isUnknown(e.Args[1]) {
		v, err = ev.constant(e.Args[1], &tText)
	} else {
		v, err = ev.eval(e.Args[1], sc)
	}
	if err != nil || v.null {
		return nil, err
	}
	if k, _ := kindOf(v.t); k != kText {
		return nil, rewrite.Refusal("LIKE with a pattern of type %s is not supported in a query the proxy computes", v.t)
	}
	s := str(v)
	if c := ev.rowPatterns[e.Like]; c.p != nil && c.s == s {
		return c.p, nil
	}
	p, err := e.Like.Compile(s, ev.env.CType)
	if err != nil {
		return nil, err
	}
	if ev.rowPatterns == nil {
		ev.rowPatterns = map[*ir.Like]compiledPattern{}
	}
	ev.rowPatterns[e.Like] = compiledPattern{s, p}
	return p, nil
}

// compiledPattern is the last pattern a LIKE computed per row compiled.
type compiledPattern struct {
	s string
	p *pglike.Pattern
}

// sameTimestamps casts a date compared with a timestamp[tz] to it, and a
// timestamp compared with a timestamptz to timestamptz (in the session's
// time zone), as PostgreSQL's implicit casts do; other values are
// returned as they are.
func (ev *evaluator) sameTimestamps(a, b aval) (aval, aval) {
	ka, _ := kindOf(a.t)
	kb, _ := kindOf(b.t)
	// A date compared with a timestamp is that day's midnight
	// (date_cmp_timestamp[tz]).
	if ka == kDate && kb == kTs {
		a, ka = dateToTimestamp(a, b.t, ev.env), kTs
	}
	if kb == kDate && ka == kTs {
		b, kb = dateToTimestamp(b, a.t, ev.env), kTs
	}
	if ka != kTs || kb != kTs || a.t.Base == b.t.Base {
		return a, b
	}
	widen := func(x aval) aval {
		if x.t.Base == onion.Timestamptz || x.i == math.MinInt64 || x.i == math.MaxInt64 {
			return aval{t: tTimestamptz, i: x.i}
		}
		return aval{t: tTimestamptz, i: onion.FromLocalTime(x.i, ev.env.TimeZone)}
	}
	return widen(a), widen(b)
}
