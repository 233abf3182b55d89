package rewrite

import (
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestParseArrayLiteral(t *testing.T) {
	s := func(v string) *string { return &v }
	for in, want := range map[string][]*string{
		`{}`:                         nil,
		`{1,2,NULL}`:                 {s("1"), s("2"), nil},
		`{x,it's,NULL}`:              {s("x"), s("it's"), nil},
		`{"a\"b","c,d",""}`:          {s(`a"b`), s("c,d"), s("")},
		`{ a , "NULL" , null }`:      {s("a"), s("NULL"), nil},
		`{2024-01-02,NULL}`:          {s("2024-01-02"), nil},
		`{"2024-06-01 10:00:00+02"}`: {s("2024-06-01 10:00:00+02")},
		`{a\,b}`:                     {s("a,b")},
	} {
		got, err := parseArrayLiteral(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q %v, want %q", in, deref(got), err, deref(want))
		}
	}
	for _, in := range []string{``, `1,2`, `{"a}`, `{a,}`, `{{1},{2}}`, `{a"b}`, `{"a"x}`} {
		var pe *pgconn.PgError
		if _, err := parseArrayLiteral(in); !errors.As(err, &pe) || pe.Code != "22P02" {
			t.Errorf("%s: %v, want 22P02", in, err)
		}
	}
}

func deref(v []*string) []string {
	var out []string
	for _, p := range v {
		if p == nil {
			out = append(out, "<NULL>")
		} else {
			out = append(out, *p)
		}
	}
	return out
}

func FuzzParseArrayLiteral(f *testing.F) {
	for _, s := range []string{`{}`, `{1,2,NULL}`, `{"a\"b","c,d",""}`, `{a\,b}`, `{ x }`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = parseArrayLiteral(s) // must not panic
	})
}

func TestUnnestValues(t *testing.T) {
	for in, want := range map[string]string{
		`INSERT INTO t (a, b, c) SELECT * FROM UNNEST(('{1,2,NULL}'::int2[])::integer[], ('{x,it''s,NULL}')::varchar(10)[], ('{NULL,NULL,NULL}')::timestamp with time zone[]) RETURNING t.id`: `INSERT INTO t (a, b, c) VALUES ('1'::int, 'x'::varchar(10), NULL), ('2'::int, 'it''s'::varchar(10), NULL), (NULL, NULL, NULL) RETURNING t.id`,
		`INSERT INTO t (a, b) SELECT * FROM unnest('{1}'::int[], ('{p,q}')::text[])`:                                                                                                          `INSERT INTO t (a, b) VALUES ('1'::int, 'p'::text), (NULL, 'q'::text)`,
	} {
		st, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		out, ok, err := UnnestValues(st[0])
		if !ok || err != nil || out.SQL != want {
			t.Errorf("%s:\n got %v %v %s\nwant %s", in, ok, err, out.SQL, want)
		}
	}
	for _, in := range []string{
		`INSERT INTO t (a) SELECT * FROM UNNEST($1::int[])`,
		`INSERT INTO t (a) SELECT x FROM UNNEST('{1}'::int[]) x`,
		`INSERT INTO t (a) SELECT * FROM UNNEST('{1}'::int[]) WHERE true`,
		`INSERT INTO t (a) VALUES (1)`,
		`INSERT INTO t (a, b) SELECT * FROM UNNEST('{1}'::int[])`,
	} {
		st, err := Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := UnnestValues(st[0]); ok || err != nil {
			t.Errorf("%s: rewritten (%v)", in, err)
		}
	}
}
