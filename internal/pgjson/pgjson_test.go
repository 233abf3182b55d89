package pgjson

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// A small alphabet of keys and strings, so that random documents share
// keys and values often.
var words = []string{"a", "b", "aa", "", "é", "1", "0", "-1", "A", "b\"c"}

func randomJSON(r *rand.Rand, depth int) string {
	k := r.IntN(10)
	if depth >= 3 {
		k = r.IntN(6)
	}
	switch k {
	case 0:
		return "null"
	case 1:
		return []string{"true", "false"}[r.IntN(2)]
	case 2, 3:
		return []string{"0", "1", "1.0", "-2.5", "1e2", "100", "10", "-0", "0.10"}[r.IntN(9)]
	case 4, 5:
		return strconv.Quote(words[r.IntN(len(words))])
	case 6, 7:
		items := make([]string, r.IntN(4))
		for i := range items {
			items[i] = randomJSON(r, depth+1)
		}
		return "[" + strings.Join(items, ", ") + "]"
	default:
		n := r.IntN(4)
		items := make([]string, n)
		for i := range items {
			items[i] = strconv.Quote(words[r.IntN(len(words))]) + ": " + randomJSON(r, depth+1)
		}
		return "{" + strings.Join(items, ", ") + "}"
	}
}

func show(v *Value) string {
	if v == nil {
		return "NULL"
	}
	return v.String()
}

func showText(v *Value) string {
	if v == nil {
		return "NULL"
	}
	s, ok := v.Text()
	if !ok {
		return "NULL"
	}
	return s
}

// TestAgainstServer computes every operator over random documents here and
// on the server, and compares.
func TestAgainstServer(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	r := rand.New(rand.NewPCG(5, 6))
	const n = 3000
	var as, bs, keys []string
	var idx []int32
	var paths [][]string
	for range n {
		as, bs = append(as, randomJSON(r, 0)), append(bs, randomJSON(r, 1))
		keys = append(keys, words[r.IntN(len(words))])
		idx = append(idx, int32(r.IntN(7)-3))
		p := make([]string, r.IntN(3))
		for i := range p {
			p[i] = words[r.IntN(len(words))]
		}
		paths = append(paths, p)
	}
	// Half of the pairs compare a document with itself or a near copy.
	for i := 0; i < n; i += 4 {
		bs[i] = as[i]
	}
	rows, err := conn.Query(ctx, `
		SELECT a::jsonb::text, sign(jsonb_cmp(a::jsonb, b::jsonb)), a::jsonb = b::jsonb, a::jsonb @> b::jsonb, b::jsonb <@ a::jsonb,
			a::jsonb ? k, a::jsonb ?| ARRAY[k, 'a'], a::jsonb ?& ARRAY[k, 'a'],
			coalesce((a::jsonb -> k)::text, 'NULL'), coalesce(a::jsonb ->> k, 'NULL'),
			coalesce((a::jsonb -> i)::text, 'NULL'), coalesce(a::jsonb ->> i, 'NULL'),
			coalesce((a::jsonb #> p)::text, 'NULL'), coalesce(a::jsonb #>> p, 'NULL')
		FROM unnest($1::text[], $2::text[], $3::text[], $4::int4[]) WITH ORDINALITY AS u(a, b, k, i, o)
		CROSS JOIN LATERAL (SELECT coalesce((SELECT array_agg(x ORDER BY n) FROM jsonb_array_elements_text(($5::text[])[o]::jsonb) WITH ORDINALITY AS e(x, n)), '{}') AS p) pp
		ORDER BY o`, as, bs, keys, idx, joinPaths(paths))
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	i := 0
	for rows.Next() {
		var out, fk, ftext, fi, fitext, fp, fptext string
		var cmp int
		var eq, contains, contained, exists, any, all bool
		if err := rows.Scan(&out, &cmp, &eq, &contains, &contained, &exists, &any, &all, &fk, &ftext, &fi, &fitext, &fp, &fptext); err != nil {
			t.Fatal(err)
		}
		a, err := Parse(as[i])
		if err != nil {
			t.Fatalf("%s: %v", as[i], err)
		}
		b := MustParse(bs[i])
		k := keys[i]
		ka := k
		got := fmt.Sprint(a.String(), Compare(a, b), Compare(a, b) == 0, a.Contains(b), a.Contains(b), a.Exists(k), a.ExistsAny([]*string{&k, ptr("a")}), a.ExistsAll([]*string{&ka, ptr("a")}),
			show(a.Field(k)), showText(a.Field(k)), show(a.Element(int64(idx[i]))), showText(a.Element(int64(idx[i]))), show(a.Path(paths[i])), showText(a.Path(paths[i])))
		want := fmt.Sprint(out, cmp, eq, contains, contained, exists, any, all, fk, ftext, fi, fitext, fp, fptext)
		if got != want && bad < 10 {
			bad++
			t.Errorf("a=%s b=%s k=%q i=%d path=%q:\n got %s\nwant %s", as[i], bs[i], k, idx[i], paths[i], got, want)
		}
		if eqKey := string(a.AppendEqualityKey(nil)) == string(b.AppendEqualityKey(nil)); eqKey != eq && bad < 10 {
			bad++
			t.Errorf("equality key of %s and %s: %v, server's = %v", as[i], bs[i], eqKey, eq)
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("%d rows, want %d", i, n)
	}
}

func ptr(s string) *string { return &s }

// joinPaths encodes each path as a JSON array of strings.
func joinPaths(paths [][]string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		q := make([]string, len(p))
		for j, step := range p {
			q[j] = strconv.Quote(step)
		}
		out[i] = "[" + strings.Join(q, ", ") + "]"
	}
	return out
}

// TestCasts compares the casts to numeric and boolean with the server's,
// errors included.
func TestCasts(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, s := range []string{"1", "1.50", "-0", "1e2", `"1"`, "null", "true", "[]", "{}", `{"a": 1}`, "false"} {
		v := MustParse(s)
		var want string
		var pe *pgconn.PgError
		err := conn.QueryRow(ctx, `SELECT $1::jsonb::numeric::text`, s).Scan(&want)
		d, gerr := v.Numeric("numeric")
		switch {
		case errors.As(err, &pe):
			var ge *pgconn.PgError
			if !errors.As(gerr, &ge) || ge.Code != pe.Code || ge.Message != pe.Message {
				t.Errorf("%s::numeric: got %v, want %v", s, gerr, err)
			}
		case err != nil:
			t.Fatal(err)
		case gerr != nil || d.String() != want:
			t.Errorf("%s::numeric: got %v %v, want %s", s, d, gerr, want)
		}
		var wb bool
		err = conn.QueryRow(ctx, `SELECT $1::jsonb::boolean`, s).Scan(&wb)
		gb, gerr := v.Boolean()
		switch {
		case errors.As(err, &pe):
			var ge *pgconn.PgError
			if !errors.As(gerr, &ge) || ge.Message != pe.Message {
				t.Errorf("%s::boolean: got %v, want %v", s, gerr, err)
			}
		case err != nil:
			t.Fatal(err)
		case gerr != nil || gb != wb:
			t.Errorf("%s::boolean: got %v %v, want %v", s, gb, gerr, wb)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.50, "x\u00e9"], "b": null}`, `[]`, `"\ud83d\ude00"`, `1e400`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err != nil {
			return
		}
		out := v.String()
		w, err := Parse(out)
		if err != nil {
			t.Fatalf("output %q of %q does not parse: %v", out, s, err)
		}
		if w.String() != out || Compare(v, w) != 0 {
			t.Fatalf("%q: output %q reparsed as %q", s, out, w.String())
		}
	})
}
