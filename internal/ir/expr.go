package ir

// AggOutput is one column of the result.
type AggOutput struct {
	Name string
	Expr *Expr
}

// AggOrder is one ORDER BY key.
type AggOrder struct {
	Expr             *Expr
	Desc, NullsFirst bool
}

// ExprKind says what an Expr is.
type ExprKind int

// Expression kinds.
const (
	ExprInput    ExprKind = iota // an input column (Input)
	ExprConst                    // a constant (Const, ConstType)
	ExprOp                       // Op over Args: + - * / || (binary; unary -), = <> < <= > >=
	ExprBool                     // Op AND, OR, NOT over Args
	ExprNullTest                 // Op "IS NULL" or "IS NOT NULL" of Args[0]
	ExprLike                     // Args[0] LIKE Like (its Const is the pattern, else Args[1])
	ExprIn                       // Args[0] IN (Args[1:]); Op "=" (IN) or "<>" (NOT IN)
	ExprCase                     // CASE WHEN Args[0] THEN Args[1] ... ELSE Else END
	ExprAgg                      // Func(Args[0]) over the group: sum avg count min max, stddev and variance
	ExprFunc                     // Func(Args): a function of the engine's scalar library; "cast" to ConstType
	ExprLookup                   // Lookup's value for the keys Args (NULL when it has none)
	ExprParam                    // the client's parameter $Input (extended protocol): rewrite.AggPlan.BindParams makes it a constant
	ExprWindow                   // Func(Args) OVER Window: row_number rank dense_rank, or sum avg count min max
)

// Expr is an expression the proxy evaluates.
type Expr struct {
	Kind  ExprKind
	Input int
	// Const is the constant's text (nil: NULL); ConstType as in rewrite.CmpHole.
	Const *string
	// ConstType is a constant's type as in rewrite.CmpHole, or the target type of
	// a cast (ExprFunc "cast"; CastTarget).
	ConstType string
	Op        string
	Func      string
	// Distinct is count(DISTINCT x) etc.; Star is count(*).
	Distinct, Star bool
	Args           []*Expr
	Else           *Expr
	Like           *Like
	Lookup         *Lookup
	Window         *Window // ExprWindow's OVER clause
}

// HasWindow reports whether e computes a window function.
func HasWindow(e *Expr) bool {
	found := false
	WalkExpr(e, func(x *Expr) { found = found || x.Kind == ExprWindow })
	return found
}

// WalkExpr calls f on e and every expression below it.
func WalkExpr(e *Expr, f func(*Expr)) {
	if e == nil {
		return
	}
	f(e)
	for _, a := range e.Args {
		WalkExpr(a, f)
	}
	WalkExpr(e.Else, f)
	if e.Window != nil {
		for _, p := range e.Window.Partition {
			WalkExpr(p, f)
		}
		for _, o := range e.Window.Order {
			WalkExpr(o.Expr, f)
		}
		if fr := e.Window.Frame; fr != nil {
			WalkExpr(fr.Start.Offset, f)
			WalkExpr(fr.End.Offset, f)
		}
	}
}

// ExprParams returns the parameter numbers e reads, each once.
func ExprParams(e *Expr) []int {
	var out []int
	seen := map[int]bool{}
	WalkExpr(e, func(x *Expr) {
		if x.Kind == ExprParam && !seen[x.Input] {
			seen[x.Input] = true
			out = append(out, x.Input)
		}
	})
	return out
}

// ParamConst is the value of a parameter as a constant: its text (nil:
// NULL) and its type as the client declared it ("" for none: an untyped
// literal, typed by its use).
type ParamConst struct {
	Text *string
	Type string
}

// LimitValue is a LIMIT or OFFSET applied by the proxy: a constant, a
// client parameter, or neither (no limit).
type LimitValue struct {
	Const *int64
	Param int
}
