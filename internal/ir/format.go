package ir

import (
	"fmt"
	"strconv"
	"strings"
)

// OrderString is an ORDER BY key in SQL-like text, for EXPLAIN.
func OrderString(o AggOrder) string {
	s := ExprString(o.Expr)
	if o.Desc {
		s += " DESC"
	}
	if o.NullsFirst != o.Desc {
		if o.NullsFirst {
			s += " NULLS FIRST"
		} else {
			s += " NULLS LAST"
		}
	}
	return s
}

// ExprString is e in SQL-like text, for EXPLAIN: inputs are in1, in2 ...
func ExprString(e *Expr) string {
	if e == nil {
		return "NULL"
	}
	args := func(sep string) string {
		parts := make([]string, len(e.Args))
		for i, a := range e.Args {
			parts[i] = ExprString(a)
		}
		return strings.Join(parts, sep)
	}
	switch e.Kind {
	case ExprInput:
		return "in" + strconv.Itoa(e.Input+1)
	case ExprConst:
		if e.Const == nil {
			return "NULL"
		}
		switch e.ConstType {
		case "integer", "bigint", "smallint", "numeric":
			return *e.Const
		}
		s := "'" + strings.ReplaceAll(*e.Const, "'", "''") + "'"
		if e.ConstType != "" {
			s += "::" + e.ConstType
		}
		return s
	case ExprParam:
		return "$" + strconv.Itoa(e.Input)
	case ExprOp:
		if e.Op == "neg" {
			return "(-" + ExprString(e.Args[0]) + ")"
		}
		return "(" + args(" "+e.Op+" ") + ")"
	case ExprBool:
		if e.Op == "NOT" {
			return "(NOT " + ExprString(e.Args[0]) + ")"
		}
		return "(" + args(" "+e.Op+" ") + ")"
	case ExprNullTest:
		return "(" + ExprString(e.Args[0]) + " " + e.Op + ")"
	case ExprLike:
		op := "LIKE"
		if e.Like.CaseInsensitive {
			op = "ILIKE"
		}
		if e.Like.Negate {
			op = "NOT " + op
		}
		pat := "?"
		switch {
		case e.Like.Const != nil:
			pat = "'" + strings.ReplaceAll(*e.Like.Const, "'", "''") + "'"
		case e.Like.Param > 0:
			pat = "$" + strconv.Itoa(e.Like.Param)
		case len(e.Args) > 1:
			pat = ExprString(e.Args[1])
		}
		return "(" + ExprString(e.Args[0]) + " " + op + " " + pat + ")"
	case ExprIn:
		op := "IN"
		if e.Op == "<>" {
			op = "NOT IN"
		}
		parts := make([]string, len(e.Args)-1)
		for i, a := range e.Args[1:] {
			parts[i] = ExprString(a)
		}
		return "(" + ExprString(e.Args[0]) + " " + op + " (" + strings.Join(parts, ", ") + "))"
	case ExprCase:
		var b strings.Builder
		b.WriteString("CASE")
		for i := 0; i+1 < len(e.Args); i += 2 {
			fmt.Fprintf(&b, " WHEN %s THEN %s", ExprString(e.Args[i]), ExprString(e.Args[i+1]))
		}
		if e.Else != nil {
			b.WriteString(" ELSE " + ExprString(e.Else))
		}
		return b.String() + " END"
	case ExprAgg:
		switch {
		case e.Star:
			return e.Func + "(*)"
		case e.Distinct:
			return e.Func + "(DISTINCT " + args(", ") + ")"
		}
		return e.Func + "(" + args(", ") + ")"
	case ExprFunc:
		if e.Func == "cast" && len(e.Args) == 1 {
			return ExprString(e.Args[0]) + "::" + e.ConstType
		}
		return e.Func + "(" + args(", ") + ")"
	case ExprLookup:
		return "lookup(" + args(", ") + ")"
	case ExprWindow:
		call := e.Func + "(" + args(", ") + ")"
		if e.Star {
			call = e.Func + "(*)"
		}
		return call + " OVER (" + windowString(e.Window) + ")"
	}
	return "?"
}

func windowString(w *Window) string {
	var parts []string
	if len(w.Partition) > 0 {
		ps := make([]string, len(w.Partition))
		for i, p := range w.Partition {
			ps[i] = ExprString(p)
		}
		parts = append(parts, "PARTITION BY "+strings.Join(ps, ", "))
	}
	if len(w.Order) > 0 {
		os := make([]string, len(w.Order))
		for i, o := range w.Order {
			os[i] = OrderString(o)
		}
		parts = append(parts, "ORDER BY "+strings.Join(os, ", "))
	}
	if f := w.Frame; f != nil {
		s := f.Mode.String() + " BETWEEN " + boundString(f.Start) + " AND " + boundString(f.End)
		switch f.Exclude {
		case ExcludeCurrentRow:
			s += " EXCLUDE CURRENT ROW"
		case ExcludeGroup:
			s += " EXCLUDE GROUP"
		case ExcludeTies:
			s += " EXCLUDE TIES"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func boundString(b FrameBound) string {
	switch b.Kind {
	case UnboundedPreceding:
		return "UNBOUNDED PRECEDING"
	case OffsetPreceding:
		return ExprString(b.Offset) + " PRECEDING"
	case CurrentRow:
		return "CURRENT ROW"
	case OffsetFollowing:
		return ExprString(b.Offset) + " FOLLOWING"
	}
	return "UNBOUNDED FOLLOWING"
}
