package rewrite

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/ir"
)

// A subquery inside an expression the proxy computes is left to the
// server: it becomes an input, a column of the server's part evaluated
// per row over the same FROM items (so a correlated subquery still sees
// the row it is correlated with), and the proxy reads its value as it
// reads any column, decrypting it when the subquery returns an
// encrypted column. The server learns nothing the subquery as a
// statement of its own would not show it.

// sublinkInput returns the input of a scalar, EXISTS, IN or op ANY/ALL
// subquery, adding it.
func (b *aggBuilder) sublinkInput(n *pg_query.Node) (*ir.Expr, error) {
	sl := n.GetSubLink()
	switch sl.SubLinkType {
	case pg_query.SubLinkType_EXPR_SUBLINK, pg_query.SubLinkType_EXISTS_SUBLINK,
		pg_query.SubLinkType_ANY_SUBLINK, pg_query.SubLinkType_ALL_SUBLINK:
	default:
		return nil, Refusal("%s is not supported in a query the proxy computes", nodeDescription(n))
	}
	if b.source != nil {
		return nil, Refusal("a subquery over a derived table the proxy computes is not supported")
	}
	text, err := exprText(n, b.st.version)
	if err != nil {
		return nil, Refusal("a subquery the proxy cannot read back is not supported in a query the proxy computes")
	}
	key := "(subquery) " + text
	if i, ok := b.inputs[key]; ok {
		return &ir.Expr{Kind: ir.ExprInput, Input: i}, nil
	}
	i := len(b.targets)
	b.inputs[key] = i
	b.targets = append(b.targets, pg_query.MakeResTargetNodeWithVal(proto.Clone(n).(*pg_query.Node), -1))
	return &ir.Expr{Kind: ir.ExprInput, Input: i}, nil
}

// exprText is an expression's SQL text, the same for the same expression
// wherever it is written.
func exprText(n *pg_query.Node, version int32) (string, error) {
	sel := &pg_query.SelectStmt{TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(n, -1)},
		Op: pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT}
	return deparseNode(&pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}, version)
}

// sublinkDependent reports, as checkDependent does for a column, whether
// a subquery input may be read in a grouped select list: each column it
// reads from the enclosing query must be grouped (or depend on a grouped
// primary key), so that the subquery has one value per group, as
// PostgreSQL requires. Only qualified references are read as the
// enclosing query's (Django qualifies every one); an unqualified one, or
// one inside an aggregate (which would be the enclosing query's), is
// refused.
func (b *aggBuilder) sublinkDependent(sl *pg_query.SubLink) error {
	refusal := Refusal("a subquery in the select list of a grouped query the proxy computes must read only grouped columns of the enclosing query, qualified by their table")
	inner := map[string]bool{}
	inspect(sl.ProtoReflect(), func(m protoreflect.Message) bool {
		switch x := m.Interface().(type) {
		case *pg_query.RangeVar:
			inner[x.Relname] = true
			if x.Alias != nil {
				inner[x.Alias.Aliasname] = true
			}
		case *pg_query.RangeSubselect:
			if x.Alias != nil {
				inner[x.Alias.Aliasname] = true
			}
		case *pg_query.CommonTableExpr:
			inner[x.Ctename] = true
		}
		return true
	})
	// A name inside that is also the enclosing query's could hide which
	// level a reference reads (a nested subquery's FROM t next to a
	// reference to the enclosing t): refused.
	clash := false
	for _, f := range b.sel.FromClause {
		inspect(f.ProtoReflect(), func(m protoreflect.Message) bool {
			switch x := m.Interface().(type) {
			case *pg_query.SubLink:
				return false
			case *pg_query.RangeVar:
				clash = clash || inner[x.Relname] || x.Alias != nil && inner[x.Alias.Aliasname]
			case *pg_query.RangeSubselect:
				clash = clash || x.Alias != nil && inner[x.Alias.Aliasname]
				return false
			}
			return true
		})
	}
	if clash {
		return refusal
	}
	var outer []*pg_query.ColumnRef
	bad := false
	var walk func(m protoreflect.Message, inAgg bool)
	walk = func(m protoreflect.Message, inAgg bool) {
		inspect(m, func(m protoreflect.Message) bool {
			switch x := m.Interface().(type) {
			case *pg_query.FuncCall:
				if !inAgg && x.Over == nil && isAggregate(x) {
					for _, a := range x.Args {
						walk(a.ProtoReflect(), true)
					}
					if x.AggFilter != nil {
						walk(x.AggFilter.ProtoReflect(), true)
					}
					return false
				}
			case *pg_query.ColumnRef:
				f := x.Fields
				if f[len(f)-1].GetAStar() != nil {
					return false
				}
				switch {
				case len(f) == 1:
					bad = true
				case !inner[fieldName(f[len(f)-2])]:
					if inAgg {
						bad = true
					}
					outer = append(outer, x)
				}
				return false
			}
			return true
		})
	}
	walk(sl.Subselect.ProtoReflect(), false)
	if bad {
		return refusal
	}
	for _, cr := range outer {
		e := &ir.Expr{Kind: ir.ExprInput, Input: b.input(cr)}
		if err := b.checkGrouped(e); err != nil {
			if IsRefusal(err) {
				return refusal
			}
			return err
		}
	}
	return nil
}
