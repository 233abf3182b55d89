package search

import "github.com/pgonion/pgonion/internal/pglike"

// The tests read LIKE patterns with the project's one LIKE parser
// (pglike), as the proxy does, and hand its literal runs to the tokenizer.

// Escape runes of the tests' patterns.
const (
	noEscape      rune = -1 // an empty ESCAPE clause
	defaultEscape rune = '\\'
)

func compileLike(pattern string, escape rune, caseInsensitive bool) (*pglike.Pattern, error) {
	esc := string(escape)
	switch escape {
	case noEscape:
		esc = pglike.NoEscape
	case defaultEscape:
		esc = pglike.DefaultEscape
	}
	return pglike.Compile(pattern, esc, caseInsensitive)
}

// tokensForPattern is what the proxy asks the server to find for a LIKE
// (or ILIKE) pattern: nil when there is no prefilter.
func tokensForPattern(z *Tokenizer, pattern string, escape rune, caseInsensitive bool) []int64 {
	p, err := compileLike(pattern, escape, caseInsensitive)
	if err != nil {
		return nil
	}
	var segs []Segment
	for _, s := range p.Segments() {
		segs = append(segs, Segment{Literal: s.Literal, AnchoredStart: s.AnchoredStart, AnchoredEnd: s.AnchoredEnd})
	}
	return z.TokensForSegments(segs)
}

// likeMatch is text LIKE pattern ESCAPE escape, as PostgreSQL (C
// collation) evaluates it; a pattern PostgreSQL rejects matches nothing.
func likeMatch(text, pattern string, escape rune) bool {
	p, err := compileLike(pattern, escape, false)
	return err == nil && p.Match(text)
}
