package pglocale

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// interesting are code points whose case mapping is irregular: ß, the
// titlecase digraphs, dotted and dotless i, the Kelvin and long s signs
// that lower or upper into ASCII, ligatures, Greek final sigma.
var interesting = []rune("aAzZ09 _ßǅǄǆİıKſﬀςΣσÉéÿŸµΜǰ\u0345ⅰⅠⓐⒶｅＥ𐐀𐐨ꞵ\u1E9E")

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(8) {
		switch r.IntN(4) {
		case 0:
			b.WriteRune(interesting[r.IntN(len(interesting))])
		case 1:
			b.WriteRune(rune(0x20 + r.IntN(0x5f)))
		case 2:
			b.WriteRune(rune(0xa0 + r.IntN(0x600)))
		default:
			b.WriteRune(rune(0x1e00 + r.IntN(0x2000)))
		}
	}
	return b.String()
}

// TestAgainstServer compares upper and lower with the server's under every
// libc collation of the test cluster the proxy can load (its ctype is the
// one upper(x COLLATE c) uses), and under C.
func TestAgainstServer(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT collname, collctype FROM pg_collation WHERE collprovider = 'c' AND collencoding IN (-1, 6) AND collctype <> ''`)
	if err != nil {
		t.Fatal(err)
	}
	type coll struct{ Name, Ctype string }
	colls, err := pgx.CollectRows(rows, pgx.RowToStructByPos[coll])
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	inputs := make([]string, 0, 2000)
	for range cap(inputs) {
		inputs = append(inputs, randomText(r))
	}
	for _, c := range []rune(string(interesting)) {
		inputs = append(inputs, string(c))
	}
	tested := 0
	for _, c := range colls {
		if Check(c.Ctype) != nil {
			continue
		}
		tested++
		var ups, lows []string
		q := `SELECT upper(x COLLATE ` + pgx.Identifier{c.Name}.Sanitize() + `), lower(x COLLATE ` + pgx.Identifier{c.Name}.Sanitize() + `) FROM unnest($1::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i`
		rows, err := conn.Query(ctx, q, inputs)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var u, l string
			if err := rows.Scan(&u, &l); err != nil {
				t.Fatal(err)
			}
			ups, lows = append(ups, u), append(lows, l)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, in := range inputs {
			u, err1 := Upper(c.Ctype, in)
			l, err2 := Lower(c.Ctype, in)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if (u != ups[i] || l != lows[i]) && bad < 5 {
				bad++
				t.Errorf("%s: upper/lower(%q) = %q, %q; server %q, %q", c.Name, in, u, l, ups[i], lows[i])
			}
		}
	}
	if tested < 2 {
		t.Fatalf("only %d collations tested (want C and at least one UTF-8 locale)", tested)
	}
	t.Logf("%d inputs under %d collations", len(inputs), tested)
}

func TestUnknownLocale(t *testing.T) {
	if _, err := Upper("xx_NOPE.UTF-8", "a"); err == nil {
		t.Fatal("an unknown locale mapped case")
	}
}

// TestByteOrderAgainstServer sorts random text under each collation of the
// test cluster that ByteOrder accepts and compares with byte order.
func TestByteOrderAgainstServer(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT collname, collcollate FROM pg_collation WHERE collprovider = 'c' AND collencoding IN (-1, 6) AND collcollate <> ''`)
	if err != nil {
		t.Fatal(err)
	}
	type coll struct{ Name, Collate string }
	colls, err := pgx.CollectRows(rows, pgx.RowToStructByPos[coll])
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	inputs := make([]string, 0, 3000)
	for range cap(inputs) {
		s := randomText(r)
		if r.IntN(3) == 0 {
			s += string(rune(0x10000 + r.IntN(0x20000))) // beyond the BMP
		}
		inputs = append(inputs, s)
	}
	want := slices.Clone(inputs)
	slices.Sort(want)
	tested := 0
	for _, c := range colls {
		if !ByteOrder(c.Collate) {
			continue
		}
		tested++
		var got []string
		rows, err := conn.Query(ctx, `SELECT x FROM unnest($1::text[]) AS u(x) ORDER BY x COLLATE `+pgx.Identifier{c.Name}.Sanitize(), inputs)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var x string
			if err := rows.Scan(&x); err != nil {
				t.Fatal(err)
			}
			got = append(got, x)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("collation %s (%s) does not sort by bytes", c.Name, c.Collate)
		}
	}
	if tested < 3 {
		t.Fatalf("only %d byte-order collations tested (want C, POSIX and C.utf8)", tested)
	}
}
