package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPostgresNoFalseNegatives checks the prefilter against PostgreSQL
// itself on random texts (ASCII with LIKE's special characters, Unicode,
// random case) and random LIKE and ILIKE patterns: for every row where the
// server finds value LIKE/ILIKE pattern true, the server also finds
// tokens @> pattern_tokens true, with the tokens in a GIN-indexed int8[]
// column. It also checks that pglike (the proxy's LIKE) agrees exactly
// with the server's.
func TestPostgresNoFalseNegatives(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	z := newTestTokenizer(t)
	rng := rand.New(rand.NewPCG(21, 22))
	nTexts, nPatterns := 1500, 300
	if testing.Short() {
		nTexts, nPatterns = 400, 100
	}
	texts := make([]string, nTexts)
	rows := make([][]any, nTexts)
	for i := range texts {
		texts[i] = randomText(rng, 40)
		rows[i] = []any{i, texts[i], z.Tokens(texts[i])}
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE docs (id int PRIMARY KEY, v text NOT NULL, tok int8[] NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"docs"}, []string{"id", "v", "tok"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE INDEX ON docs USING gin (tok); ANALYZE docs"); err != nil {
		t.Fatal(err)
	}

	// The text form round-trips through the server's int8[] parser.
	var same bool
	lit := string(AppendArrayText(nil, z.Tokens(texts[0])))
	if err := conn.QueryRow(ctx, "SELECT tok = $1::text::int8[] FROM docs WHERE id = 0", lit).Scan(&same); err != nil || !same {
		t.Fatalf("AppendArrayText form %s does not equal the stored array: %v %v", lit, same, err)
	}

	// ILIKE depends on the collation's lower(): check the database's
	// default (C: ASCII only) and a libc UTF-8 collation when the server
	// has one.
	collations := []string{`"C"`}
	var utf8Coll string
	err = conn.QueryRow(ctx, `SELECT collname FROM pg_collation WHERE collprovider = 'c' AND collname IN ('C.utf8', 'C.UTF-8', 'en_US.utf8', 'en_US.UTF-8') ORDER BY collname LIMIT 1`).Scan(&utf8Coll)
	if err == nil {
		collations = append(collations, pgx.Identifier{utf8Coll}.Sanitize())
		var lowered string
		if err := conn.QueryRow(ctx, "SELECT lower('ÉΣẞ' COLLATE "+pgx.Identifier{utf8Coll}.Sanitize()+")").Scan(&lowered); err != nil {
			t.Fatal(err)
		}
		if lowered != "éσß" {
			t.Logf("note: lower() in %s gives %q: not Unicode-aware", utf8Coll, lowered)
		}
	} else if err != pgx.ErrNoRows {
		t.Fatal(err)
	}
	t.Logf("collations: %v", collations)

	var likeMatches, ilikeMatches, candidates, prefiltered int
	for i := 0; i < nPatterns; i++ {
		pattern, escape := randomPattern(rng, texts[rng.IntN(len(texts))])
		escSQL := "''"
		if escape != noEscape {
			escSQL = fmt.Sprintf("'%c'", escape)
			if escape == '\'' {
				t.Fatal("quote as escape")
			}
		}
		toks := tokensForPattern(z, pattern, escape, false)
		if itoks := tokensForPattern(z, pattern, escape, true); !slices.Equal(toks, itoks) {
			t.Fatalf("LIKE and ILIKE tokens differ for %q", pattern)
		}
		if toks == nil {
			toks = []int64{} // no prefilter: @> '{}' is always true
		} else {
			prefiltered++
		}

		// LIKE: the server's matches, and those the prefilter drops.
		q := fmt.Sprintf("SELECT id, tok @> $2 FROM docs WHERE v LIKE $1 ESCAPE %s", escSQL)
		got, err := queryMatches(ctx, conn, q, pattern, toks)
		if err != nil {
			t.Fatalf("%s with %q: %v", q, pattern, err)
		}
		for id, pass := range got {
			if !pass {
				t.Errorf("false negative: %q LIKE %q ESCAPE %s on the server, but not tok @> tokens", texts[id], pattern, escSQL)
			}
		}
		likeMatches += len(got)
		// Pattern.Match agrees with the server's LIKE on every row.
		for id, s := range texts {
			_, server := got[id]
			if likeMatch(s, pattern, escape) != server {
				t.Errorf("Match(%q, %q ESCAPE %s) = %v, server says %v", s, pattern, escSQL, !server, server)
			}
		}

		for _, coll := range collations {
			q := fmt.Sprintf("SELECT id, tok @> $2 FROM docs WHERE (v COLLATE %s) ILIKE $1 ESCAPE %s", coll, escSQL)
			got, err := queryMatches(ctx, conn, q, pattern, toks)
			if err != nil {
				t.Fatalf("%s with %q: %v", q, pattern, err)
			}
			for id, pass := range got {
				if !pass {
					t.Errorf("false negative: %q ILIKE %q ESCAPE %s COLLATE %s on the server, but not tok @> tokens", texts[id], pattern, escSQL, coll)
				}
			}
			ilikeMatches += len(got)
		}

		// How selective the prefilter is, as the server evaluates it.
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM docs WHERE tok @> $1", toks).Scan(&n); err != nil {
			t.Fatal(err)
		}
		candidates += n
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("%d patterns (%d with a prefilter): %d LIKE matches, %d ILIKE matches, %d prefilter candidates of %d row checks",
		nPatterns, prefiltered, likeMatches, ilikeMatches, candidates, nPatterns*nTexts)
	if likeMatches == 0 || ilikeMatches <= likeMatches || prefiltered < nPatterns/3 {
		t.Errorf("weak test: %d LIKE matches, %d ILIKE matches, %d of %d patterns prefilterable", likeMatches, ilikeMatches, prefiltered, nPatterns)
	}
	if candidates >= nPatterns*nTexts {
		t.Errorf("the prefilter never excluded a row")
	}

	// The GIN index serves the containment query.
	if _, err := conn.Exec(ctx, "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	planRows, err := conn.Query(ctx, "EXPLAIN SELECT id FROM docs WHERE tok @> $1", tokensForPattern(z, "%quick%", defaultEscape, false))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(planRows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "Index Scan on docs_tok_idx") {
		t.Errorf("the containment query does not use the GIN index: %s", plan)
	}
}

func queryMatches(ctx context.Context, conn *pgx.Conn, q, pattern string, toks []int64) (map[int]bool, error) {
	rows, err := conn.Query(ctx, q, pattern, toks)
	if err != nil {
		return nil, err
	}
	out := make(map[int]bool)
	for rows.Next() {
		var id int
		var pass bool
		if err := rows.Scan(&id, &pass); err != nil {
			return nil, err
		}
		out[id] = pass
	}
	return out, rows.Err()
}
