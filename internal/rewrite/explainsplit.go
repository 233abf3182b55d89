package rewrite

import (
	"fmt"
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// ExplainSplit describes what the proxy computes in split execution, as
// lines in the style of EXPLAIN's text format: the nodes the proxy runs
// over the decrypted rows of the server's part, outermost first. Inputs
// are in1, in2 ...: the columns of the server part, in order. The server
// part's own plan follows these lines in EXPLAIN's output, each of its
// lines after serverIndent.
func ExplainSplit(p *AggPlan) (lines []string, serverIndent string) {
	indent := ""
	for x := p; x != nil; x = x.Source {
		if x != p {
			lines = append(lines, indent+"->  Proxy Derived Table")
			indent += "      "
		}
		lines = append(lines, explainNode(x, indent)...)
	}
	lines = append(lines, indent+"->  Server Part  (PostgreSQL, over onion columns; its output columns are in1, in2, ...)")
	return lines, indent + "      "
}

// ExplainOptions returns EXPLAIN st's FORMAT (text, json, yaml or xml)
// and whether it runs the statement (ANALYZE).
func ExplainOptions(st Statement) (format string, analyze bool) {
	format = "text"
	for _, o := range st.Tree.GetStmt().GetExplainStmt().GetOptions() {
		d := o.GetDefElem()
		switch d.GetDefname() {
		case "format":
			if s := d.GetArg().GetString_(); s != nil {
				format = strings.ToLower(s.Sval)
			}
		case "analyze":
			analyze = d.GetArg() == nil || defBool(d.GetArg())
		}
	}
	return format, analyze
}

// defBool reads an EXPLAIN option's boolean argument (true, on, 1 ...).
func defBool(n *pg_query.Node) bool {
	switch {
	case n.GetBoolean() != nil:
		return n.GetBoolean().Boolval
	case n.GetInteger() != nil:
		return n.GetInteger().Ival != 0
	case n.GetString_() != nil:
		switch strings.ToLower(n.GetString_().Sval) {
		case "false", "off", "0", "no", "f", "n":
			return false
		}
	}
	return true
}

// explainNode is one AggPlan's node and its properties.
func explainNode(p *AggPlan, indent string) []string {
	node := "Proxy Aggregate"
	switch {
	case p.Ungrouped && hasWindows(p):
		node = "Proxy WindowAgg"
	case p.Ungrouped:
		node = "Proxy Result"
	}
	out := []string{indent + node + "  (pgonion computes this over decrypted rows)"}
	prop := func(name string, items []string) {
		if len(items) > 0 {
			out = append(out, indent+"  "+name+": "+strings.Join(items, ", "))
		}
	}
	var outs []string
	for _, o := range p.Outputs {
		outs = append(outs, ExprString(o.Expr))
	}
	prop("Output", outs)
	if p.JoinResidual != nil {
		prop("Join Filter", []string{ExprString(p.JoinResidual)})
	}
	if p.Where != nil {
		prop("Filter", []string{ExprString(p.Where)})
	}
	var keys []string
	for _, g := range p.Group {
		keys = append(keys, ExprString(g))
	}
	prop("Group Key", keys)
	if p.Having != nil {
		prop("Having", []string{ExprString(p.Having)})
	}
	var sorts []string
	for i, o := range p.Order {
		s := orderString(o)
		if i < p.DistinctOn {
			s += " (DISTINCT ON)"
		}
		sorts = append(sorts, s)
	}
	prop("Sort Key", sorts)
	if v := limitString(p.Limit); v != "" {
		prop("Limit", []string{v})
	}
	if v := limitString(p.Offset); v != "" {
		prop("Offset", []string{v})
	}
	return out
}

func hasWindows(p *AggPlan) bool {
	for _, o := range p.Outputs {
		if HasWindow(o.Expr) {
			return true
		}
	}
	return false
}

func limitString(v LimitValue) string {
	switch {
	case v.Const != nil:
		return strconv.FormatInt(*v.Const, 10)
	case v.Param > 0:
		return "$" + strconv.Itoa(v.Param)
	}
	return ""
}

func orderString(o AggOrder) string {
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
			os[i] = orderString(o)
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
