package pglike

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// The differential tests evaluate LIKE and ILIKE on PostgreSQL and with
// this package, and compare the results, errors included.

var (
	diffSeed  = flag.Uint64("diff.seed", 1, "seed of TestDifferentialRandom")
	diffCount = flag.Int("diff.count", 30000, "cases of TestDifferentialRandom")
)

// tryLike evaluates one case and returns "true", "false", or "ERR
// sqlstate|message|hint". clause false means no ESCAPE clause.
const tryLike = `
CREATE FUNCTION try_like(t text, p text, e text, ci bool, clause bool) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r bool;
	h text;
BEGIN
	IF clause THEN
		IF ci THEN r := t ILIKE p ESCAPE e; ELSE r := t LIKE p ESCAPE e; END IF;
	ELSE
		IF ci THEN r := t ILIKE p; ELSE r := t LIKE p; END IF;
	END IF;
	RETURN r::text;
EXCEPTION WHEN others THEN
	GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
	RETURN 'ERR ' || SQLSTATE || '|' || SQLERRM || '|' || h;
END $$`

type diffConn struct {
	t    *testing.T
	conn *pgx.Conn
}

func newDiffConn(t *testing.T) *diffConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var enc, ctype string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_encoding'), datctype FROM pg_database WHERE datname = current_database()").Scan(&enc, &ctype); err != nil {
		t.Fatal(err)
	}
	if enc != "UTF8" || ctype != "C" {
		t.Fatalf("the test database has encoding %s and LC_CTYPE %s, want UTF8 and C", enc, ctype)
	}
	if _, err := conn.Exec(ctx, tryLike); err != nil {
		t.Fatal(err)
	}
	return &diffConn{t: t, conn: conn}
}

// server evaluates cases on the server, in batches.
func (d *diffConn) server(cases []like) []string {
	d.t.Helper()
	var out []string
	const batch = 5000
	for len(cases) > 0 {
		n := min(batch, len(cases))
		b := cases[:n]
		cases = cases[n:]
		ts, ps, es := make([]string, n), make([]string, n), make([]string, n)
		cis, clauses := make([]bool, n), make([]bool, n)
		for i, c := range b {
			ts[i], ps[i], cis[i] = c.text, c.pattern, c.ci
			switch c.escape {
			case DefaultEscape:
			case NoEscape:
				clauses[i] = true
			default:
				es[i], clauses[i] = c.escape, true
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		rows, err := d.conn.Query(ctx, `SELECT try_like(t, p, e, ci, clause)
			FROM unnest($1::text[], $2::text[], $3::text[], $4::bool[], $5::bool[]) WITH ORDINALITY AS u(t, p, e, ci, clause, n)
			ORDER BY n`, ts, ps, es, cis, clauses)
		if err != nil {
			cancel()
			d.t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		cancel()
		if err != nil {
			d.t.Fatal(err)
		}
		if len(got) != n {
			d.t.Fatalf("server returned %d results for %d cases", len(got), n)
		}
		out = append(out, got...)
	}
	return out
}

// local evaluates c with this package, in the server's notation.
func local(c like) string {
	p, err := Compile(c.pattern, c.escape, c.ci)
	if err == nil {
		var ok bool
		ok, err = p.Eval(c.text)
		if err == nil {
			if ok != p.Match(c.text) {
				return "Match and Eval disagree"
			}
			return fmt.Sprint(ok)
		}
	}
	n := errName(err)
	if !strings.HasPrefix(n, "ERR") {
		return n
	}
	pe := err.(interface{ SQLState() string })
	var msg, hint string
	switch n {
	case errTrail:
		msg = "LIKE pattern must not end with escape character"
	case errEscape:
		msg, hint = "invalid escape string", "Escape string must be empty or one character."
	}
	return "ERR " + pe.SQLState() + "|" + msg + "|" + hint
}

func (d *diffConn) compare(cases []like) {
	d.t.Helper()
	want := d.server(cases)
	bad := 0
	for i, c := range cases {
		if got := local(c); got != want[i] {
			esc := fmt.Sprintf("ESCAPE %q", c.escape)
			switch c.escape {
			case DefaultEscape:
				esc = "(no ESCAPE)"
			case NoEscape:
				esc = "ESCAPE ''"
			}
			d.t.Errorf("%q %s %q %s: got %s, server %s", c.text, op(c.ci), c.pattern, esc, got, want[i])
			if bad++; bad > 30 {
				d.t.Fatal("too many differences")
			}
		}
	}
}

// TestDifferentialTable checks the unit test table against the server.
func TestDifferentialTable(t *testing.T) {
	d := newDiffConn(t)
	d.compare(likeCases)
}

// TestDifferentialRandom checks random cases from a small alphabet.
func TestDifferentialRandom(t *testing.T) {
	d := newDiffConn(t)
	r := rand.New(rand.NewPCG(*diffSeed, 0x6c696b65))
	cases := make([]like, *diffCount)
	for i := range cases {
		cases[i] = randomCase(r)
	}
	d.compare(cases)
	for _, c := range cases {
		if p, err := Compile(c.pattern, c.escape, c.ci); err == nil {
			checkRef(t, p, c.text, c.pattern, c.escape, c.ci)
		}
	}
	outcomes := map[string]int{}
	for _, c := range cases {
		outcomes[local(c)]++
	}
	t.Logf("%d cases: %v", len(cases), outcomes)
}

var (
	alphabet = []string{"a", "A", "%", "_", `\`, "é", "É", "ß", " ", "#", "b"}
	escapes  = []string{
		DefaultEscape, DefaultEscape, DefaultEscape, DefaultEscape, NoEscape, `\`,
		"a", "A", "%", "_", "é", "É", "#", " ", "ß",
	}
	badEscapes = []string{"ab", "éa", `\\`, "##", "a\u0301"}
)

func randomString(r *rand.Rand, max int) string {
	var b strings.Builder
	for range r.IntN(max + 1) {
		b.WriteString(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func randomCase(r *rand.Rand) like {
	c := like{
		text:   randomString(r, 7),
		escape: escapes[r.IntN(len(escapes))],
		ci:     r.IntN(2) == 0,
	}
	if r.IntN(30) == 0 {
		c.escape = badEscapes[r.IntN(len(badEscapes))]
	}
	if r.IntN(3) == 0 {
		c.pattern = randomString(r, 7)
		return c
	}
	// A pattern derived from the text, so that many cases match.
	esc := `\`
	switch c.escape {
	case DefaultEscape:
	case NoEscape:
		esc = ""
	default:
		esc = c.escape
	}
	var b strings.Builder
	for _, ch := range c.text {
		s := string(ch)
		switch r.IntN(10) {
		case 0:
			s = "_"
		case 1:
			s = "%"
		case 2:
			s = "%" + s
		case 3:
			s = esc + s
		case 4:
			if r.IntN(2) == 0 {
				s = strings.ToUpper(s)
			} else {
				s = strings.ToLower(s)
			}
		case 5:
			s = alphabet[r.IntN(len(alphabet))]
		}
		b.WriteString(s)
	}
	switch r.IntN(8) {
	case 0:
		b.WriteString("%")
	case 1:
		b.WriteString(esc)
	}
	c.pattern = b.String()
	return c
}

// TestDifferentialCaseFolding checks ILIKE on every pair of characters that
// Unicode case-folds together: only ASCII letters match each other.
func TestDifferentialCaseFolding(t *testing.T) {
	d := newDiffConn(t)
	var cases []like
	for c := rune(0); c <= unicode.MaxRune; c++ {
		if c == '%' || c == '_' || c == '\\' || c == 0 || (c >= 0xd800 && c <= 0xdfff) {
			continue
		}
		for f := unicode.SimpleFold(c); f != c; f = unicode.SimpleFold(f) {
			cases = append(cases, like{text: string(c), pattern: string(f), ci: true})
		}
		if u := unicode.ToUpper(c); u != c {
			cases = append(cases, like{text: string(c), pattern: string(u), ci: true})
		}
		if l := unicode.ToLower(c); l != c {
			cases = append(cases, like{text: string(c), pattern: string(l), ci: true})
		}
		if s := strings.ToUpper(string(c)); s != string(c) {
			cases = append(cases, like{text: string(c), pattern: s, ci: true})
		}
	}
	d.compare(cases)
	t.Logf("%d case-folding pairs", len(cases))
}

// TestServerLowerIsASCII checks that lower() under the C collation, which
// ILIKE applies, changes exactly A-Z.
func TestServerLowerIsASCII(t *testing.T) {
	d := newDiffConn(t)
	var got string
	err := d.conn.QueryRow(context.Background(), `SELECT coalesce(string_agg(chr(c), '' ORDER BY c), '')
		FROM generate_series(1, 1114111) AS c
		WHERE (c < 55296 OR c > 57343) AND lower(chr(c)) <> chr(c)`).Scan(&got)
	if err != nil {
		t.Fatal(err)
	}
	if got != "ABCDEFGHIJKLMNOPQRSTUVWXYZ" {
		t.Errorf("lower() changes %q", got)
	}
}
