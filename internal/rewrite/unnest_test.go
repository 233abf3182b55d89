package rewrite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/pgtest"
)

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

// TestPlanUnnestParams: the bulk INSERT of array parameters is
// recognized, its arrays of encrypted columns get arrays of cells, and
// the server accepts the statement (prepared on a table as PlanCreate
// makes it); other shapes are left to the other planners or refused.
func TestPlanUnnestParams(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ct := planTable(t, conn, "CREATE TABLE bulk (id int PRIMARY KEY, owner text, balance numeric(12,2), note_plain text)")
	for _, tc := range []struct {
		sql    string
		arrays string // param:column(+ encrypted), "" for not this planner, or "ERROR code"
	}{
		{`INSERT INTO bulk (id, owner, balance) SELECT * FROM UNNEST(($1)::integer[], ($2)::text[], ($3)::numeric[]) RETURNING bulk.id, bulk.owner`, "1:id 2:owner+ 3:balance+"},
		{`INSERT INTO bulk (owner, note_plain, id) SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) ON CONFLICT (owner) DO NOTHING`, "1:owner+ 2:note_plain 3:id"},
		{`INSERT INTO bulk (id, owner) SELECT * FROM UNNEST('{1}'::int[], '{a}'::text[])`, ""},
		{`INSERT INTO bulk (id, owner) SELECT * FROM UNNEST($1::int[], $2::text[]) ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, note_plain = 'n'`, "1:id 2:owner+"},
		{`INSERT INTO bulk (id, owner) SELECT * FROM UNNEST($1::int[], $2::text[]) ON CONFLICT (id) DO UPDATE SET owner = 'x'`, "ERROR 0A000"},
		{`INSERT INTO bulk (id, owner) SELECT * FROM UNNEST($1::int[], $2::text[]) RETURNING $2`, "ERROR 0A000"},
		{`INSERT INTO bulk (id, owner) VALUES ($1, $2)`, ""},
	} {
		sts, err := Parse(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanUnnestParams(sts[0], ct.Table)
		var got string
		switch {
		case err != nil:
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				got = "ERROR " + pe.Code
			} else {
				got = "ERROR " + err.Error()
			}
		case p != nil:
			var parts []string
			for _, a := range p.Arrays {
				s := fmt.Sprintf("%d:%s", a.Param, a.name)
				if a.Column != nil {
					s += "+"
				}
				parts = append(parts, s)
			}
			got = strings.Join(parts, " ")
		}
		if got != tc.arrays {
			t.Errorf("%s: %q, want %q", tc.sql, got, tc.arrays)
		}
		if p == nil {
			continue
		}
		n := 0 // the client's parameters
		for _, a := range p.Arrays {
			n = max(n, a.Param)
		}
		cells := map[*catalog.Column]Cells{}
		for _, a := range p.Arrays {
			if a.Column == nil {
				continue
			}
			layout, err := UnnestCells(a.Column)
			if err != nil {
				t.Fatal(err)
			}
			cells[a.Column] = Cells{}
			for _, pc := range layout {
				n++
				cells[a.Column][pc.Suffix] = ParamNode(n)
			}
		}
		sql, err := p.Render(ParamNode(n+1), cells)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		oids := make([]uint32, n+1)
		for _, a := range p.Arrays {
			if a.Column != nil {
				oids[a.Param-1] = 1009 // text[]: the server never sees these
			}
		}
		if _, err := conn.PgConn().Prepare(ctx, "", sql, oids); err != nil {
			t.Errorf("%s: the server refuses %s: %v", tc.sql, sql, err)
		}
	}
}
