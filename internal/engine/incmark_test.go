package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestIncrementMarkFollowsItsTransaction: the catalog's increment mark
// (the column's Eq and Ord onions may be stale) is written by the first
// incrementing UPDATE itself, so it commits or rolls back with the rows
// (issue 24: a rolled-back UPDATE that matched no row used to mark the
// column for good, and statements prepared earlier then failed in every
// session). While the incrementing transaction is open, other sessions
// read the column from its Add onion and do not compare its stale onions,
// through this proxy and through another one.
func TestIncrementMarkFollowsItsTransaction(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, incPolicy)
	p2 := startProxy(t, db, incPolicy) // b's: it learns of the increment from the intent
	direct := db.direct(t)
	marked := func(column string) bool {
		t.Helper()
		var inc bool
		if err := direct.QueryRow(ctx, `SELECT c.incremented FROM pgonion.columns c JOIN pgonion.tables t USING (table_id)
			WHERE t.table_name = 'inc' AND c.column_name = $1`, column).Scan(&inc); err != nil {
			t.Fatal(err)
		}
		return inc
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
		t.Run(mode.String(), func(t *testing.T) {
			a := p.connect(t, mode)
			b := p2.connect(t, pgx.QueryExecModeCacheStatement)
			mustExec(t, a, "DROP TABLE IF EXISTS inc")
			mustExec(t, a, incDDL)
			mustExec(t, a, "INSERT INTO inc VALUES (1, 10, 1.50, 7), (2, 20, 2.50, 8)")
			// b prepares a comparison on bal before any increment.
			ids := func(conn *pgx.Conn, bal int) ([]int32, error) {
				rows, err := conn.Query(ctx, "SELECT id FROM inc WHERE bal = $1 ORDER BY id", bal)
				if err != nil {
					return nil, err
				}
				return pgx.CollectRows(rows, pgx.RowTo[int32])
			}
			if got, err := ids(b, 10); err != nil || !reflect.DeepEqual(got, []int32{1}) {
				t.Fatalf("before: %v %v", got, err)
			}

			for _, tc := range []struct{ name, where string }{{"no row", "id = 999"}, {"rows", "id <= 2"}} {
				mustExec(t, a, "BEGIN")
				mustExec(t, a, fmt.Sprintf("UPDATE inc SET bal = bal + 5 WHERE %s", tc.where))
				// a's own transaction reads its increment.
				var bal int32
				if err := a.QueryRow(ctx, "SELECT bal FROM inc WHERE id = 1").Scan(&bal); err != nil {
					t.Fatalf("%s: read in the incrementing transaction: %v", tc.name, err)
				}
				if want := map[string]int32{"no row": 10, "rows": 15}[tc.name]; bal != want {
					t.Fatalf("%s: read %d in the incrementing transaction, want %d", tc.name, bal, want)
				}
				if marked("bal") {
					t.Fatalf("%s: the mark is visible before the transaction committed", tc.name)
				}
				// Meanwhile b must not compare bal's onions: its
				// prepared comparison is refused, or planned again and
				// answered from the Add onion (in the proxy), with the
				// committed values.
				if got, err := ids(b, 10); pgCode(err) != "0A000" && (err != nil || !reflect.DeepEqual(got, []int32{1})) {
					t.Fatalf("%s: prepared comparison during the increment: %v %v, want 0A000 or [1]", tc.name, got, err)
				}
				var sum int64
				if err := b.QueryRow(ctx, "SELECT sum(bal) FROM inc", pgx.QueryExecModeSimpleProtocol).Scan(&sum); err != nil || sum != 30 {
					t.Fatalf("%s: b's sum during the increment: %d %v, want 30", tc.name, sum, err)
				}
				mustExec(t, a, "ROLLBACK")
				if marked("bal") {
					t.Fatalf("%s: the mark survived the rollback", tc.name)
				}
				// The column is comparable again, for statements
				// prepared before and after; the other proxy may
				// refuse until it has seen the intent go (it learns
				// of it asynchronously), never answer wrong.
				deadline := time.Now().Add(5 * time.Second)
				for {
					got, err := ids(b, 10)
					if err == nil && reflect.DeepEqual(got, []int32{1}) {
						break
					}
					if pgCode(err) != "0A000" || time.Now().After(deadline) {
						t.Fatalf("%s: prepared comparison after the rollback: %v %v", tc.name, got, err)
					}
					time.Sleep(20 * time.Millisecond)
				}
				if got, err := ids(a, 20); err != nil || !reflect.DeepEqual(got, []int32{2}) {
					t.Fatalf("%s: comparison after the rollback: %v %v", tc.name, got, err)
				}
			}

			// A failing statement takes its mark with it too.
			if _, err := a.Exec(ctx, "UPDATE inc SET bal = bal + 5, amt = amt + 1 WHERE id = 1 AND 1/0 = 1"); pgCode(err) != "22012" {
				t.Fatalf("failing increment: %v, want 22012", err)
			}
			if marked("bal") || marked("amt") {
				t.Fatal("the mark survived a failed statement")
			}

			// Committed, the mark stays and reads agree.
			mustExec(t, a, "UPDATE inc SET bal = bal + 5 WHERE id = 1")
			if !marked("bal") {
				t.Fatal("committed increment: column not marked")
			}
			var bal int32
			if err := b.QueryRow(ctx, "SELECT bal FROM inc WHERE id = 1").Scan(&bal); err != nil || bal != 15 {
				t.Fatalf("after the commit b reads %d %v, want 15", bal, err)
			}
			var stale int
			if err := direct.QueryRow(ctx, "SELECT count(*) FROM inc WHERE bal__eq IS NULL AND bal__add IS NOT NULL").Scan(&stale); err != nil || stale != 1 {
				t.Fatalf("stale rows: %d %v, want 1", stale, err)
			}
		})
	}
}
