package rewrite

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/pglike"
)

// Like is one LIKE, ILIKE, NOT LIKE or NOT ILIKE of a statement. It is
// read in one place (readLike) and compiled in one place (Compile) for
// every path that evaluates it: the server's search-token prefilter, the
// proxy's check of a WHERE condition and split execution.
type Like struct {
	Const           *string // the pattern literal, or
	Param           int     // the 1-based client parameter holding it
	Escape          *string // the ESCAPE clause, nil when absent
	CaseInsensitive bool    // ILIKE
	Negate          bool    // NOT LIKE, NOT ILIKE
}

// Compile compiles pattern (the Const or the Param's value) under the
// ESCAPE clause and case folding, with PostgreSQL's semantics and errors
// (pglike): 22025 for an ESCAPE of more than one character here, and from
// Pattern.Eval for the texts that reach a trailing escape character.
// ILIKE lowercases as lower() does under LC_CTYPE ctype.
func (l *Like) Compile(pattern, ctype string) (*pglike.Pattern, error) {
	esc := pglike.DefaultEscape
	if l.Escape != nil {
		esc = *l.Escape
		if esc == "" {
			esc = pglike.NoEscape
		}
	}
	return pglike.CompileUnder(pattern, esc, l.CaseInsensitive, ctype)
}

// readLike reads a LIKE or ILIKE expression (an A_Expr of kind
// AEXPR_LIKE or AEXPR_ILIKE, operator ~~ !~~ ~~* or !~~*): its Like with
// Const and Param unset, and the pattern's node. The parser writes
// `x LIKE p ESCAPE e` as x ~~ like_escape(p, e); e must be a string
// constant, possibly cast (ESCAPE '#'::text).
func readLike(a *pg_query.A_Expr) (*Like, *pg_query.Node, error) {
	op := ""
	if names := stringList(a.Name); len(names) == 1 {
		op = names[0]
	}
	l := &Like{CaseInsensitive: a.Kind == pg_query.A_Expr_Kind_AEXPR_ILIKE || op == "~~*" || op == "!~~*", Negate: op == "!~~" || op == "!~~*"}
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
