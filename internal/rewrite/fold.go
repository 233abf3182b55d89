package rewrite

import (
	"math"
	"strconv"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/pgnumeric"
)

// foldValue folds arithmetic over numeric constants (1 + 10, 0.06 - 0.01)
// into one constant, as PostgreSQL evaluates it: integer constants with
// integer arithmetic (overflow is an error, division truncates), any
// decimal with numeric arithmetic. A comparison with an encrypted column
// needs one value to encrypt. Anything else is returned as it is; an
// arithmetic error (division by zero, overflow) is returned as PostgreSQL
// reports it.
func foldValue(n *pg_query.Node) (*pg_query.Node, error) {
	if n == nil || isValue(n) || n.GetAExpr() == nil {
		return n, nil
	}
	v, isInt, ok, err := foldNumber(n)
	if err != nil {
		return n, &foldError{err}
	}
	if !ok {
		return n, nil
	}
	s := v.String()
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	var out *pg_query.Node
	if x, err := strconv.ParseInt(s, 10, 32); err == nil && isInt {
		out = pg_query.MakeAConstIntNode(x, -1)
	} else {
		// A bigint or a numeric literal: the parser reads digits beyond
		// int4 as such.
		out = &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Val: &pg_query.A_Const_Fval{Fval: &pg_query.Float{Fval: s}}, Location: -1}}}
	}
	if neg {
		// A negated constant, as the parser writes -5.
		out = &pg_query.Node{Node: &pg_query.Node_AExpr{AExpr: &pg_query.A_Expr{Kind: pg_query.A_Expr_Kind_AEXPR_OP,
			Name: []*pg_query.Node{pg_query.MakeStrNode("-")}, Rexpr: out, Location: -1}}}
	}
	return out, nil
}

// foldNumber evaluates a tree of numeric constants and + - * /; ok is
// false for anything else.
func foldNumber(n *pg_query.Node) (v pgnumeric.Decimal, isInt, ok bool, err error) {
	if c := n.GetAConst(); c != nil {
		switch x := c.Val.(type) {
		case *pg_query.A_Const_Ival:
			return pgnumeric.FromInt64(int64(x.Ival.Ival)), true, true, nil
		case *pg_query.A_Const_Fval:
			d, err := pgnumeric.Parse(x.Fval.Fval)
			if err != nil {
				return d, false, false, nil
			}
			// Integers beyond int4 are bigint constants.
			_, perr := strconv.ParseInt(x.Fval.Fval, 10, 64)
			return d, perr == nil, true, nil
		}
		return v, false, false, nil
	}
	e := n.GetAExpr()
	if e == nil || e.Kind != pg_query.A_Expr_Kind_AEXPR_OP {
		return v, false, false, nil
	}
	names := stringList(e.Name)
	if len(names) != 1 {
		return v, false, false, nil
	}
	op := names[0]
	r, rInt, rok, err := foldNumber(e.Rexpr)
	if err != nil || !rok {
		return v, false, false, err
	}
	if e.Lexpr == nil {
		if op != "-" {
			return v, false, false, nil
		}
		if rInt {
			x, err := pgnumeric.NegInt(r.Coefficient().Int64())
			return pgnumeric.FromInt64(x), true, true, err
		}
		return r.Neg(), false, true, nil
	}
	l, lInt, lok, err := foldNumber(e.Lexpr)
	if err != nil || !lok {
		return v, false, false, err
	}
	if lInt && rInt {
		x, y := l.Coefficient().Int64(), r.Coefficient().Int64()
		var z int64
		// int4 arithmetic when both fit, else bigint (as the parser
		// types the constants).
		if x >= math.MinInt32 && x <= math.MaxInt32 && y >= math.MinInt32 && y <= math.MaxInt32 {
			var w int32
			switch op {
			case "+":
				w, err = pgnumeric.AddInt(int32(x), int32(y))
			case "-":
				w, err = pgnumeric.SubInt(int32(x), int32(y))
			case "*":
				w, err = pgnumeric.MulInt(int32(x), int32(y))
			case "/":
				w, err = pgnumeric.DivInt(int32(x), int32(y))
			default:
				return v, false, false, nil
			}
			return pgnumeric.FromInt64(int64(w)), true, true, err
		}
		switch op {
		case "+":
			z, err = pgnumeric.AddInt(x, y)
		case "-":
			z, err = pgnumeric.SubInt(x, y)
		case "*":
			z, err = pgnumeric.MulInt(x, y)
		case "/":
			z, err = pgnumeric.DivInt(x, y)
		default:
			return v, false, false, nil
		}
		return pgnumeric.FromInt64(z), true, true, err
	}
	switch op {
	case "+":
		v, err = l.Add(r)
	case "-":
		v, err = l.Sub(r)
	case "*":
		v, err = l.Mul(r)
	case "/":
		v, err = l.Div(r)
	default:
		return v, false, false, nil
	}
	return v, false, true, err
}

// foldError is an arithmetic error of constant folding, which the
// planner raises (unlike parse analysis's errors, such as a literal out
// of its type's range): an OR after a literal true never raises it.
type foldError struct{ err error }

func (e *foldError) Error() string { return e.err.Error() }
func (e *foldError) Unwrap() error { return e.err }
