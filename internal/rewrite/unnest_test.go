package rewrite

import "testing"

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
