package ir

import (
	"github.com/pgonion/pgonion/internal/pglike"
)

// Like is one LIKE, ILIKE, NOT LIKE or NOT ILIKE of a statement. It is
// read in one place (package rewrite's readLike) and compiled in one place (Compile) for
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
