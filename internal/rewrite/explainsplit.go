package rewrite

import (
	"strconv"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/ir"
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
		outs = append(outs, ir.ExprString(o.Expr))
	}
	prop("Output", outs)
	if p.JoinResidual != nil {
		prop("Join Filter", []string{ir.ExprString(p.JoinResidual)})
	}
	if p.Where != nil {
		prop("Filter", []string{ir.ExprString(p.Where)})
	}
	var keys []string
	for _, g := range p.Group {
		keys = append(keys, ir.ExprString(g))
	}
	prop("Group Key", keys)
	if p.Having != nil {
		prop("Having", []string{ir.ExprString(p.Having)})
	}
	var sorts []string
	for i, o := range p.Order {
		s := ir.OrderString(o)
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
		if ir.HasWindow(o.Expr) {
			return true
		}
	}
	return false
}

func limitString(v ir.LimitValue) string {
	switch {
	case v.Const != nil:
		return strconv.FormatInt(*v.Const, 10)
	case v.Param > 0:
		return "$" + strconv.Itoa(v.Param)
	}
	return ""
}
