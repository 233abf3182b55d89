package rewrite

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/ir"
)

// readLike reads a LIKE or ILIKE expression (an A_Expr of kind
// AEXPR_LIKE or AEXPR_ILIKE, operator ~~ !~~ ~~* or !~~*): its Like with
// Const and Param unset, and the pattern's node. The parser writes
// `x LIKE p ESCAPE e` as x ~~ like_escape(p, e); e must be a string
// constant, possibly cast (ESCAPE '#'::text).
func readLike(a *pg_query.A_Expr) (*ir.Like, *pg_query.Node, error) {
	op := ""
	if names := stringList(a.Name); len(names) == 1 {
		op = names[0]
	}
	l := &ir.Like{CaseInsensitive: a.Kind == pg_query.A_Expr_Kind_AEXPR_ILIKE || op == "~~*" || op == "!~~*", Negate: op == "!~~" || op == "!~~*"}
	pat := a.Rexpr
	if fc := pat.GetFuncCall(); fc != nil && funcName(fc) == "like_escape" && len(fc.Args) == 2 {
		esc := fc.Args[1]
		for esc.GetTypeCast() != nil {
			esc = esc.GetTypeCast().Arg
		}
		s, ok := esc.GetAConst().GetVal().(*pg_query.A_Const_Sval)
		if !ok {
			return nil, nil, Refusal("LIKE with an ESCAPE that is not a string constant is not supported over encrypted columns")
		}
		l.Escape = &s.Sval.Sval
		pat = fc.Args[0]
	}
	return l, pat, nil
}
