package rewrite

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/pgtest"
)

func TestPlanDeleteGolden(t *testing.T) {
	runDMLGolden(t, "delete", dmlTestSeed, func(st Statement, table *catalog.Table) (dmlGoldenResult, error) {
		p, err := PlanDelete(st, table)
		if err != nil {
			return dmlGoldenResult{}, err
		}
		sql, err := p.Render(testHoleValues(p.Where))
		if err != nil {
			return dmlGoldenResult{}, err
		}
		return dmlGoldenResult{sql: sql, returning: p.Returning}, nil
	})
}

// TestPlanDeleteReturning deletes rows and reads back what RETURNING
// gives, through the projection: the cells of the deleted rows.
func TestPlanDeleteReturning(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ct := planTable(t, conn, dmlTestTable)
	for _, sql := range dmlTestSeed {
		dmlTestInsert(t, conn, ct.Table, sql)
	}
	stmts, err := Parse("DELETE FROM acc WHERE id < 3 AND note_plain IS NOT NULL RETURNING note_plain, email, id")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanDelete(stmts[0], ct.Table)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, p.SQL)
	if err != nil {
		t.Fatalf("the server rejects %q: %v", p.SQL, err)
	}
	got := map[int]string{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		// RETURNING note_plain, email, id: plain values keep the server's
		// name (Name ""); email is decrypted from its onion cells.
		cols := p.Returning.Columns
		id := vals[cols[2].Server].(int32)
		email := vals[cols[1].Server].([]byte)
		if cols[1].Column == nil || cols[1].Column.Name != "email" || cols[0].Column != nil || cols[2].Column != nil {
			t.Fatalf("projection %s", describeProjection(p.Returning))
		}
		if vals[cols[1].Salt] != nil {
			t.Errorf("salt override of email = %v, want NULL (the cells use the row salt)", vals[cols[1].Salt])
		}
		var salt []byte
		salt = vals[p.Returning.Salt].([]byte)
		got[int(id)] = string(email) + "/" + string(salt)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		1: string(dmlTestCiphertext("email", "_eq", "ann@x")) + "/" + strings.Repeat("\x01", 16),
		2: string(dmlTestCiphertext("email", "_eq", "bob@x")) + "/" + strings.Repeat("\x01", 16),
	}
	if len(got) != len(want) || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("RETURNING gave %x, want %x", got, want)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM acc").Scan(&n); err != nil || n != 1 {
		t.Errorf("%d rows left, %v; want 1", n, err)
	}
}
