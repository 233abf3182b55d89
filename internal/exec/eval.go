package exec

import (
	"errors"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pglike"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Evaluator computes the expressions of one split execution.
type Evaluator struct {
	In     []onion.Type // the input columns' types
	Env    onion.Env
	consts map[*ir.Expr]Value
	// patterns are the LIKE patterns, compiled once (per copy: maps are
	// not shared between workers).
	patterns map[*ir.Like]*pglike.Pattern
	// rowPatterns are the patterns computed per row (rowPattern).
	rowPatterns map[*ir.Like]compiledPattern
	aggs        map[*ir.Expr]int // aggregate -> index of its state
	wins        map[*ir.Expr]int // window function -> index of its values (window.go)
	// lookups are the decorrelated subqueries' values, read-only once
	// built (shared by the workers).
	lookups map[*ir.Lookup]*LookupTable
	sigs    map[*ir.Expr]*callSig // typed function calls (scalar.go)
	// refused is the first call the scalar library refused, for the
	// message.
	refused *ir.Expr
	// Clock gives the current time (scalarclock.go); nil where none is
	// known, which refuses the functions reading it.
	Clock *ServerClock
}

// NewEvaluator returns an evaluator of expressions over inputs of types
// in, reading and showing values in env.
func NewEvaluator(in []onion.Type, env onion.Env) *Evaluator {
	return &Evaluator{In: in, Env: env, consts: map[*ir.Expr]Value{}}
}

// Prepare readies ev for exprs, the expressions of one plan: it builds
// the decorrelated subqueries' lookup tables, numbers the aggregates and
// window functions (returned in index order: a Scope's Aggs and Wins)
// and checks the constants.
func (ev *Evaluator) Prepare(exprs []*ir.Expr) (aggs, wins []*ir.Expr, err error) {
	ev.aggs, ev.wins, ev.lookups = map[*ir.Expr]int{}, map[*ir.Expr]int{}, map[*ir.Lookup]*LookupTable{}
	for _, e := range exprs {
		ir.WalkExpr(e, func(x *ir.Expr) {
			if x.Kind == ir.ExprLookup && ev.lookups[x.Lookup] == nil && err == nil {
				ev.lookups[x.Lookup], err = NewLookupTable(x.Lookup, ev.Env)
			}
			if x.Kind == ir.ExprAgg {
				if _, ok := ev.aggs[x]; !ok {
					ev.aggs[x] = len(ev.aggs)
					aggs = append(aggs, x)
				}
			}
			if x.Kind == ir.ExprWindow {
				if _, ok := ev.wins[x]; !ok {
					ev.wins[x] = len(ev.wins)
					wins = append(wins, x)
				}
			}
		})
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range exprs {
		if err := ev.checkConstants(e); err != nil {
			return nil, nil, err
		}
	}
	return aggs, wins, nil
}

// Clone returns a copy of ev for another goroutine: the lookup tables
// are shared (read-only), the caches each copy fills are its own.
func (ev *Evaluator) Clone() *Evaluator {
	c := *ev
	c.consts = map[*ir.Expr]Value{}
	c.patterns, c.rowPatterns = nil, nil
	c.sigs = maps.Clone(ev.sigs)
	return &c
}

// Refused is the first call the scalar library refused, or nil.
func (ev *Evaluator) Refused() *ir.Expr { return ev.refused }

// Scope is what expressions read: the inputs of one row (the group's
// first row, for grouped expressions), and the group's aggregates.
type Scope struct {
	Row  []Value
	Aggs []Value
	Wins []Value // the row's window function values
}

// TypeOf is the type of e's values.
func (ev *Evaluator) TypeOf(e *ir.Expr) (onion.Type, error) {
	switch e.Kind {
	case ir.ExprInput:
		return ev.In[e.Input], nil
	case ir.ExprConst:
		v, err := ev.constant(e, nil)
		return v.Type, err
	case ir.ExprLike:
		if !IsUnknown(e.Args[0]) {
			t, err := ev.TypeOf(e.Args[0])
			if err != nil {
				return TypeBool, err
			}
			if k, _ := KindOf(t); k != KindText {
				if ev.refused == nil {
					ev.refused = e
				}
				return TypeBool, rewrite.Refusal("LIKE over a value of type %s is not supported in a query the proxy computes", t)
			}
		}
		return TypeBool, nil
	case ir.ExprBool, ir.ExprNullTest, ir.ExprIn:
		return TypeBool, nil
	case ir.ExprOp:
		if e.Op == "neg" {
			return ev.TypeOf(e.Args[0])
		}
		switch e.Op {
		case "=", "<>", "<", "<=", ">", ">=":
			return TypeBool, nil
		case "||":
			_, err := ev.concatTypes(e)
			return TypeText, err
		}
		a, b, err := ev.operandTypes(e.Args[0], e.Args[1])
		if err != nil {
			return onion.Type{}, err
		}
		if v, ok, err := timeArith(e.Op, NullOf(a), NullOf(b), ev.Env); ok {
			return v.Type, err
		}
		v, err := arith(e.Op, NullOf(a), NullOf(b))
		return v.Type, err
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
			return TypeText, nil
		}
		return *t, nil
	case ir.ExprAgg:
		if e.Star || e.Func == "count" {
			return TypeInt8, nil
		}
		t, err := ev.TypeOf(e.Args[0])
		if err != nil {
			return t, err
		}
		k, err := KindOf(t)
		if err != nil {
			return t, err
		}
		switch e.Func {
		case "sum":
			switch {
			case k == KindInt && t.Base != onion.BigInt:
				return TypeInt8, nil
			case k == KindInt || k == KindNumeric:
				return TypeNumeric, nil
			case k == KindFloat:
				return TypeFloat8, nil
			case k == KindInterval:
				return tInterval, nil
			}
			return t, rewrite.Refusal("sum of %s is not supported", t)
		case "stddev", "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop":
			switch k {
			case KindFloat:
				return TypeFloat8, nil
			case KindInt, KindNumeric:
				return TypeNumeric, nil
			}
			return t, rewrite.Refusal("%s of %s is not supported", e.Func, t)
		case "avg":
			if k == KindFloat {
				return TypeFloat8, nil
			}
			if k == KindInterval {
				return tInterval, nil
			}
			if k != KindInt && k != KindNumeric {
				return t, rewrite.Refusal("avg of %s is not supported", t)
			}
			return TypeNumeric, nil
		}
		if t.Base == onion.Varchar {
			return TypeText, nil // min and max of text: varchar has none of its own
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
func (ev *Evaluator) unify(t **onion.Type, e *ir.Expr) error {
	if e.Kind == ir.ExprConst && (e.Const == nil || IsUnknown(e)) {
		return nil
	}
	x, err := ev.TypeOf(e)
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
func (ev *Evaluator) operandTypes(a, b *ir.Expr) (onion.Type, onion.Type, error) {
	if IsUnknown(a) && !IsUnknown(b) {
		tb, err := ev.TypeOf(b)
		if err != nil {
			return tb, tb, err
		}
		v, err := ev.constant(a, &tb)
		return v.Type, tb, err
	}
	ta, err := ev.TypeOf(a)
	if err != nil {
		return ta, ta, err
	}
	if IsUnknown(b) {
		v, err := ev.constant(b, &ta)
		return ta, v.Type, err
	}
	tb, err := ev.TypeOf(b)
	return ta, tb, err
}

func IsUnknown(e *ir.Expr) bool { return e.Kind == ir.ExprConst && e.ConstType == "" }

// constant is a constant's value, cached (typed by want when unknown).
func (ev *Evaluator) constant(e *ir.Expr, want *onion.Type) (Value, error) {
	if v, ok := ev.consts[e]; ok && (want == nil || !IsUnknown(e) || v.Type.Base == want.Base) {
		return v, nil
	}
	v, err := constValue(e, want, ev.Env)
	if err != nil {
		return v, err
	}
	if ev.consts == nil {
		ev.consts = map[*ir.Expr]Value{}
	}
	ev.consts[e] = v
	return v, nil
}

// Plan checks, before any row is read, that e is typed (every operator
// and function exists for its argument types) and that its constant
// parts evaluate: the errors PostgreSQL raises when it plans.
func (ev *Evaluator) Plan(e *ir.Expr) error {
	var bad error
	ir.WalkExpr(e, func(x *ir.Expr) {
		if _, err := ev.TypeOf(x); err != nil && bad == nil {
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
func (ev *Evaluator) checkConstants(e *ir.Expr) error {
	if e == nil || e.Kind == ir.ExprCase {
		// PostgreSQL drops the arms of a CASE whose condition folds to
		// false without folding them: left to evaluation.
		return nil
	}
	if constantExpr(e) && e.Kind == ir.ExprOp {
		_, err := ev.Eval(e, &Scope{})
		if err != nil && !rewrite.IsRefusal(err) {
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
func (ev *Evaluator) pattern(l *ir.Like) (*pglike.Pattern, error) {
	if p := ev.patterns[l]; p != nil {
		return p, nil
	}
	p, err := l.Compile(*l.Const, ev.Env.CType)
	if err != nil {
		return nil, err
	}
	if ev.patterns == nil {
		ev.patterns = map[*ir.Like]*pglike.Pattern{}
	}
	ev.patterns[l] = p
	return p, nil
}

// Eval computes e in sc.
func (ev *Evaluator) Eval(e *ir.Expr, sc *Scope) (Value, error) {
	switch e.Kind {
	case ir.ExprInput:
		return sc.Row[e.Input], nil
	case ir.ExprConst:
		return ev.constant(e, nil)
	case ir.ExprAgg:
		return sc.Aggs[ev.aggs[e]], nil
	case ir.ExprWindow:
		return sc.Wins[ev.wins[e]], nil
	case ir.ExprOp:
		if e.Op == "neg" {
			a, err := ev.Eval(e.Args[0], sc)
			if err != nil {
				return a, err
			}
			if a.Null {
				return a, nil
			}
			switch k, _ := KindOf(a.Type); k {
			case KindNumeric:
				return Value{Type: a.Type, Num: a.Num.Neg()}, nil
			case KindFloat:
				return Value{Type: a.Type, Int: a.Int ^ math.MinInt64}, nil // -0 for 0, as float8um
			}
			return arith("-", Value{Type: a.Type}, a)
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
			if v, ok, err := timeArith(e.Op, a, b, ev.Env); ok {
				return v, err
			}
			return arith(e.Op, a, b)
		}
		if a.Null || b.Null {
			return NullOf(TypeBool), nil
		}
		a, b = ev.sameTimestamps(a, b)
		c, err := Compare(a, b)
		if err != nil {
			return Value{}, err
		}
		return boolVal(Compares(c, e.Op) || e.Op == "=" && c == 0 || e.Op == "<>" && c != 0), nil
	case ir.ExprBool:
		return ev.boolean(e, sc)
	case ir.ExprNullTest:
		a, err := ev.Eval(e.Args[0], sc)
		if err != nil {
			return a, err
		}
		return boolVal(a.Null == (e.Op == "IS NULL")), nil
	case ir.ExprLike:
		a, err := ev.Eval(e.Args[0], sc)
		if err != nil || a.Null || e.Like.Const == nil && len(e.Args) < 2 {
			return NullOf(TypeBool), err
		}
		if k, _ := KindOf(a.Type); k != KindText {
			return Value{}, rewrite.Refusal("LIKE over a value of type %s is not supported in a query the proxy computes", a.Type)
		}
		var p *pglike.Pattern
		if len(e.Args) > 1 {
			p, err = ev.rowPattern(e, sc)
		} else {
			p, err = ev.pattern(e.Like)
		}
		if err != nil || p == nil {
			return NullOf(TypeBool), err
		}
		ok, err := p.Eval(a.Text(ev.Env))
		if err != nil {
			return Value{}, err
		}
		return boolVal(ok != e.Like.Negate), nil
	case ir.ExprIn:
		sawNull := false
		// The tested value is computed once, not once per item (unless
		// it is itself an untyped literal, which takes each item's type).
		var left Value
		leftOnce := !IsUnknown(e.Args[0])
		if leftOnce {
			var err error
			if left, err = ev.Eval(e.Args[0], sc); err != nil {
				return left, err
			}
		}
		for _, item := range e.Args[1:] {
			var a, b Value
			var err error
			switch {
			case !leftOnce:
				a, b, err = ev.pair(e.Args[0], item, sc)
			case IsUnknown(item):
				a = left
				b, err = ev.constant(item, &a.Type)
			default:
				a = left
				b, err = ev.Eval(item, sc)
			}
			if err != nil {
				return a, err
			}
			if a.Null || b.Null {
				sawNull = true
				continue
			}
			a, b = ev.sameTimestamps(a, b)
			c, err := Compare(a, b)
			if err != nil {
				return Value{}, err
			}
			if c == 0 {
				return boolVal(e.Op == "="), nil
			}
		}
		if sawNull {
			return NullOf(TypeBool), nil
		}
		return boolVal(e.Op != "="), nil
	case ir.ExprCase:
		t, err := ev.TypeOf(e)
		if err != nil {
			return Value{}, err
		}
		for i := 0; i+1 < len(e.Args); i += 2 {
			c, err := ev.Eval(e.Args[i], sc)
			if err != nil {
				return c, err
			}
			if !c.Null && c.Int != 0 {
				return ev.castTo(e.Args[i+1], t, sc)
			}
		}
		if e.Else == nil {
			return NullOf(t), nil
		}
		return ev.castTo(e.Else, t, sc)
	case ir.ExprFunc:
		return ev.call(e, sc)
	case ir.ExprLookup:
		return ev.lookup(e, sc)
	}
	return Value{}, rewrite.Refusal("this expression is not supported in a query the proxy computes")
}

// pair evaluates two operands, an unknown literal taking the other's type.
func (ev *Evaluator) pair(x, y *ir.Expr, sc *Scope) (Value, Value, error) {
	if IsUnknown(x) && !IsUnknown(y) {
		b, err := ev.Eval(y, sc)
		if err != nil {
			return b, b, err
		}
		a, err := ev.constant(x, &b.Type)
		return a, b, err
	}
	a, err := ev.Eval(x, sc)
	if err != nil {
		return a, a, err
	}
	if IsUnknown(y) {
		b, err := ev.constant(y, &a.Type)
		return a, b, err
	}
	b, err := ev.Eval(y, sc)
	return a, b, err
}

// castTo evaluates e as type t (a CASE branch), by convertTo.
func (ev *Evaluator) castTo(e *ir.Expr, t onion.Type, sc *Scope) (Value, error) {
	if IsUnknown(e) {
		return ev.constant(e, &t) // an untyped literal is read as t
	}
	v, err := ev.Eval(e, sc)
	if err != nil {
		return NullOf(t), err
	}
	return ConvertTo(v, t, ev.Env)
}

// boolean is AND, OR and NOT with SQL's three-valued logic.
func (ev *Evaluator) boolean(e *ir.Expr, sc *Scope) (Value, error) {
	if e.Op == "NOT" {
		a, err := ev.Eval(e.Args[0], sc)
		if err != nil || a.Null {
			return NullOf(TypeBool), err
		}
		return boolVal(a.Int == 0), nil
	}
	sawNull := false
	for _, x := range e.Args {
		a, err := ev.Eval(x, sc)
		if err != nil {
			return a, err
		}
		switch {
		case a.Null:
			sawNull = true
		case (a.Int != 0) == (e.Op == "OR"):
			return boolVal(e.Op == "OR"), nil // short circuit
		}
	}
	if sawNull {
		return NullOf(TypeBool), nil
	}
	return boolVal(e.Op == "AND"), nil
}

func boolVal(b bool) Value {
	if b {
		return Value{Type: TypeBool, Int: 1}
	}
	return Value{Type: TypeBool}
}

// concatTypes types the operands of x || y as PostgreSQL resolves it
// (textcat, anynonarray || text, text || anynonarray): an untyped
// literal is text, and one operand at least must be text.
func (ev *Evaluator) concatTypes(e *ir.Expr) ([2]onion.Type, error) {
	var ts [2]onion.Type
	text := false
	for i, a := range e.Args[:2] {
		ts[i] = TypeText
		if !IsUnknown(a) {
			t, err := ev.TypeOf(a)
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
func (ev *Evaluator) concat(e *ir.Expr, sc *Scope) (Value, error) {
	ts, err := ev.concatTypes(e)
	if err != nil {
		return Value{}, err
	}
	var vs [2]Value
	for i, a := range e.Args[:2] {
		if IsUnknown(a) {
			vs[i], err = ev.constant(a, &ts[i])
		} else {
			vs[i], err = ev.Eval(a, sc)
		}
		if err != nil {
			return Value{}, err
		}
		if vs[i].Null {
			return NullOf(TypeText), nil
		}
		switch {
		case vs[i].Type.Base == onion.Boolean:
			// The cast to text (anytextcat): booltext, not boolout.
			vs[i] = textVal(strconv.FormatBool(vs[i].Int != 0))
		case !isTextType(vs[i].Type):
			vs[i] = textVal(vs[i].Text(ev.Env))
		}
	}
	return arith("||", vs[0], vs[1])
}

// rowPattern is the pattern of LIKE e computed from the row (Args[1]),
// compiled once per distinct value; nil for NULL.
func (ev *Evaluator) rowPattern(e *ir.Expr, sc *Scope) (*pglike.Pattern, error) {
	var v Value
	var err error
	if IsUnknown(e.Args[1]) {
		v, err = ev.constant(e.Args[1], &TypeText)
	} else {
		v, err = ev.Eval(e.Args[1], sc)
	}
	if err != nil || v.Null {
		return nil, err
	}
	if k, _ := KindOf(v.Type); k != KindText {
		return nil, rewrite.Refusal("LIKE with a pattern of type %s is not supported in a query the proxy computes", v.Type)
	}
	s := str(v)
	if c := ev.rowPatterns[e.Like]; c.p != nil && c.s == s {
		return c.p, nil
	}
	p, err := e.Like.Compile(s, ev.Env.CType)
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
func (ev *Evaluator) sameTimestamps(a, b Value) (Value, Value) {
	ka, _ := KindOf(a.Type)
	kb, _ := KindOf(b.Type)
	// A date compared with a timestamp is that day's midnight
	// (date_cmp_timestamp[tz]).
	if ka == KindDate && kb == KindTimestamp {
		a, _ = dateToTimestampOverflow(a, b.Type, ev.Env)
		ka = KindTimestamp
	}
	if kb == KindDate && ka == KindTimestamp {
		b, _ = dateToTimestampOverflow(b, a.Type, ev.Env)
		kb = KindTimestamp
	}
	if ka != KindTimestamp || kb != KindTimestamp || a.Type.Base == b.Type.Base {
		return a, b
	}
	widen := func(x Value) Value {
		if x.Type.Base == onion.Timestamptz || x.Int == math.MinInt64 || x.Int == math.MaxInt64 {
			return Value{Type: tTimestamptz, Int: x.Int}
		}
		return Value{Type: tTimestamptz, Int: onion.FromLocalTime(x.Int, ev.Env.TimeZone)}
	}
	return widen(a), widen(b)
}
