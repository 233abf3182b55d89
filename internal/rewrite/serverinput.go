package rewrite

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
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
func (b *aggBuilder) sublinkInput(n *pg_query.Node) (*Expr, error) {
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
		return &Expr{Kind: ExprInput, Input: i}, nil
	}
	i := len(b.targets)
	b.inputs[key] = i
	b.targets = append(b.targets, pg_query.MakeResTargetNodeWithVal(proto.Clone(n).(*pg_query.Node), -1))
	return &Expr{Kind: ExprInput, Input: i}, nil
}

// exprText is an expression's SQL text, the same for the same expression
// wherever it is written.
func exprText(n *pg_query.Node, version int32) (string, error) {
	sel := &pg_query.SelectStmt{TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(n, -1)},
		Op: pg_query.SetOperation_SETOP_NONE, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT}
	return deparseNode(&pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}, version)
}
