package exec

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestRegexAgainstServer: random patterns of the subset the proxy
// translates, matched here and by the server (LC_CTYPE C) against random
// texts; a pattern the server rejects must be refused here, and one
// refused here is only counted.
func TestRegexAgainstServer(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	r := rand.New(rand.NewPCG(21, 22))
	atoms := []string{"a", "b", "c", ".", "\\.", "\\d", "\\s", "\\w", "\\W", "[ab]", "[^a]", "[a-c]", "[[:digit:]]", "[[:alpha:]_]", "[\\d.]", "é", "\\n", "(a|bc)", "(?:ab)", "x", " ",
		"A", "B", "K", "[A-C]", "[X-b]", "[^B]", "[[:upper:]]", "[[:lower:]x]", "É", "[é-ë]"}
	quants := []string{"", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,}", "*?", "{300}"}
	texts := []string{"", "a", "ab", "abc", "aab", "bca", "a.b", "a1b2", "é", "ÉA", "x\ny", "a b", "___", "cccc", "1.5", "b", "bcbc",
		"ABC", "Ab", "xYz", "É", "_`^", "\u212a", "k", "ë", "Ë"}
	var patterns []string
	for range 600 {
		var b strings.Builder
		if r.IntN(4) == 0 {
			b.WriteString("^")
		}
		for range 1 + r.IntN(4) {
			b.WriteString(atoms[r.IntN(len(atoms))])
			b.WriteString(quants[r.IntN(len(quants))])
			if r.IntN(8) == 0 {
				b.WriteString("|")
			}
		}
		if r.IntN(4) == 0 {
			b.WriteString("$")
		}
		patterns = append(patterns, b.String())
	}
	patterns = append(patterns, "a\\1", "(?=a)", "\\y", "[[.a.]]", "***=a", "\\bx", "a{2,1}")
	compared, refused := 0, 0
	for k, p := range append(patterns, patterns...) {
		// The second time case-insensitively (~*), which folds ASCII
		// letters only under LC_CTYPE C.
		icase, op := k >= len(patterns), "~"
		if icase {
			op = "~*"
		}
		var want []bool
		err := conn.QueryRow(ctx, `SELECT array_agg(s `+op+` $1 ORDER BY i) FROM unnest($2::text[]) WITH ORDINALITY AS u(s, i)`, p, texts).Scan(&want)
		re, rerr := compileRegex(p, true, icase)
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe):
			if rerr == nil {
				t.Errorf("%q: the server fails (%v), the proxy matches", p, err)
			}
			continue
		case err != nil:
			t.Fatal(err)
		case rerr != nil:
			refused++
			continue
		}
		compared++
		for i, s := range texts {
			if got := re.MatchString(s); got != want[i] {
				t.Errorf("%q %s %q: proxy %v, server %v", s, op, p, got, want[i])
			}
		}
	}
	if compared < 600 {
		t.Fatalf("only %d patterns compared (%d refused)", compared, refused)
	}
	t.Logf("%d patterns compared on %d texts, %d refused", compared, len(texts), refused)
}
