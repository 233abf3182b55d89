package pglike

// Segment is a maximal run of literal characters of a pattern (escapes
// removed): every matching text contains it, and starts (ends) with it
// when nothing precedes (follows) it in the pattern.
type Segment struct {
	// Literal is the run's text; it is empty only for the empty pattern.
	// For ILIKE it is in the pattern's folded form (ASCII lower case).
	Literal                    string
	AnchoredStart, AnchoredEnd bool
}

// Segments returns the pattern's maximal literal runs, in order: what a
// prefilter (the search onion's tokens) may require of every matching
// text. The empty pattern has one empty segment anchored at both ends; a
// pattern of wildcards only has none. A pattern that may fail (MayFail)
// has none: the server must see every text, since some of them make
// PostgreSQL fail rather than not match.
func (p *Pattern) Segments() []Segment {
	if p.mayFail {
		return nil
	}
	pat := p.pat
	if pat == "" {
		return []Segment{{Literal: "", AnchoredStart: true, AnchoredEnd: true}}
	}
	var segs []Segment
	var lit []byte
	start := -1 // pattern offset where the current run began
	flush := func(end int) {
		if start >= 0 {
			segs = append(segs, Segment{Literal: string(lit), AnchoredStart: start == 0, AnchoredEnd: end == len(pat)})
		}
		lit, start = lit[:0], -1
	}
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case '%', '_':
			flush(i)
		case '\\':
			// The internal form escapes one byte; a multibyte character's
			// other bytes follow as literals.
			if start < 0 {
				start = i
			}
			i++
			lit = append(lit, pat[i])
		default:
			if start < 0 {
				start = i
			}
			lit = append(lit, c)
		}
	}
	flush(len(pat))
	return segs
}
