package engine

import (
	"strings"
	"testing"

	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// TestSplitTextOrderNeedsByteOrder: the proxy orders text as the C
// collation does, so a split execution that orders text is refused under
// any other collation, and equality alone is not.
func TestSplitTextOrderNeedsByteOrder(t *testing.T) {
	in := func() *ir.Expr { return &ir.Expr{Kind: ir.ExprInput} }
	lit := "b"
	for _, tc := range []struct {
		name   string
		plan   rewrite.AggPlan
		orders bool
	}{
		{"ORDER BY", rewrite.AggPlan{Order: []ir.AggOrder{{Expr: in()}}}, true},
		{"range", rewrite.AggPlan{Where: &ir.Expr{Kind: ir.ExprOp, Op: "<", Args: []*ir.Expr{in(), {Kind: ir.ExprConst, Const: &lit}}}}, true},
		{"max", rewrite.AggPlan{Outputs: []ir.AggOutput{{Expr: &ir.Expr{Kind: ir.ExprAgg, Func: "max", Args: []*ir.Expr{in()}}}}}, true},
		{"equality", rewrite.AggPlan{Where: &ir.Expr{Kind: ir.ExprOp, Op: "=", Args: []*ir.Expr{in(), {Kind: ir.ExprConst, Const: &lit}}}}, false},
	} {
		for _, coll := range []string{"C", "POSIX", "en_US.UTF-8"} {
			plan := tc.plan
			plan.Inputs = 1
			if plan.Outputs == nil {
				plan.Outputs = []ir.AggOutput{{Name: "x", Expr: in()}}
				plan.Ungrouped = true
			}
			a := newAggregator(&plan, nil, []*encrypted{nil}, newAggTypes(&plan), nil, nil, coll)
			_, err := a.start([]onion.Type{exec.TypeText}, onion.Env{})
			wantRefusal := tc.orders && coll != "C" && coll != "POSIX"
			if wantRefusal != (err != nil) || err != nil && (!isRefusal(err) || !strings.Contains(err.Error(), coll)) {
				t.Errorf("%s under %s: %v, want refusal %v", tc.name, coll, err, wantRefusal)
			}
		}
	}
}
