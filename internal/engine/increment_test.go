package engine_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// incWorkload exercises UPDATE ... SET c = c ± k on the Add onion: each
// statement runs through the proxy on encrypted columns and directly on
// plaintext ones, and rows and tags must agree. Before the first increment
// a comparison on bal works; after it, comparisons on the incremented
// columns are refused (see incRefused), while reads, SUM, AVG, COUNT and
// IS NULL still agree with PostgreSQL.
var incWorkload = []struct {
	sql  string
	args []any
}{
	{"INSERT INTO inc VALUES (1, 10, 100.50, 7), (2, NULL, -3.25, NULL), (3, -5, 0, 9000000000), (4, 0, NULL, -1)", nil},
	{"SELECT id FROM inc WHERE bal = 10", nil},
	// The first increment of a column marks it and plans again: its
	// WHERE on an encrypted column (big, not incremented yet) must be
	// planned from the client's statement again.
	{"UPDATE inc SET bal = bal + 5 WHERE big = 7", nil},
	{"UPDATE inc SET bal = bal - 7, amt = amt + 1.25 WHERE id <= 3", nil},
	{"UPDATE inc SET big = 3 + big WHERE bal IS NOT NULL", nil},
	{"UPDATE inc SET bal = bal + $1, amt = amt - $2 WHERE id = $3", []any{40, "0.75", 4}},
	{"UPDATE inc SET bal = bal + NULL WHERE id = 3", nil},
	{"UPDATE inc SET bal = inc.bal + -2 WHERE id = 1", nil},
	{"SELECT * FROM inc", nil},
	{"SELECT id, bal, amt FROM inc WHERE id >= 2", nil},
	{"SELECT sum(bal), avg(bal), sum(amt), avg(amt), count(bal), count(amt), sum(big) FROM inc", nil},
	{"SELECT id FROM inc WHERE bal IS NULL", nil},
	{"SELECT id FROM inc WHERE amt IS NOT NULL", nil},
	// Grouping and MIN/MAX of an incremented column run in the proxy
	// (split execution): the server compares nothing.
	{"SELECT bal, count(*) FROM inc GROUP BY bal ORDER BY bal", nil},
	{"SELECT max(bal), min(amt) FROM inc", nil},
	{"INSERT INTO inc VALUES (5, 1, 2.00, 3)", nil},
	{"UPDATE inc SET bal = 99 WHERE id = 3", nil},
	{"UPDATE inc SET bal = bal + 1", nil},
	{"SELECT * FROM inc", nil},
	{"DELETE FROM inc WHERE id = 5", nil},
	{"SELECT id, bal FROM inc", nil},
}

// incRefused are refused (0A000 naming the column) once bal and amt were
// incremented; those marked proxy may instead be answered by split
// execution (the proxy compares the decrypted Add onion), which it does
// when it plans them after the increments, and must then answer as
// PostgreSQL does.
var incRefused = []struct {
	sql, column string
	proxy       bool
}{
	{"SELECT id FROM inc WHERE bal = 10", "inc.bal", true},
	{"SELECT id, amt FROM inc ORDER BY amt", "inc.amt", true},
	{"UPDATE inc SET bal = bal + 1 RETURNING bal", "inc.bal", false},
	{"UPDATE inc SET amt = amt + 1.555", "inc.amt", false},
	{"UPDATE inc SET bal = bal + 1.5", "inc.bal", false},
	{"DELETE FROM inc WHERE amt > 0", "inc.amt", false},
}

const incDDL = "CREATE TABLE inc (id int, bal integer, amt numeric(12,2), big bigint)"

func incPolicy(table, column string) rewrite.ColumnPolicy {
	if column == "id" {
		return rewrite.ColumnPolicy{Policy: catalog.Plain}
	}
	return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "ord", "add"}}
}

func TestIncrementDifferential(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, incPolicy)
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			enc := p.connect(t, mode)
			plainDB := newEncDB(t)
			plain := plainDB.direct(t)
			mustExec(t, enc, "DROP TABLE IF EXISTS inc")
			mustExec(t, enc, incDDL)
			mustExec(t, plain, incDDL)
			for _, w := range incWorkload {
				got, gerr := runSorted(ctx, enc, mode, w.sql, w.args)
				want, werr := runSorted(ctx, plain, mode, w.sql, w.args)
				if gerr != nil || werr != nil {
					t.Fatalf("%s: error through the proxy %v, directly %v", w.sql, gerr, werr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s:\n got %v\nwant %v", w.sql, got, want)
				}
			}
			for _, r := range incRefused {
				got, err := runSorted(ctx, enc, mode, r.sql, nil)
				if err == nil && r.proxy {
					want, werr := runSorted(ctx, plain, mode, r.sql, nil)
					if werr != nil || !reflect.DeepEqual(got, want) {
						t.Errorf("%s: answered through the proxy %v, directly %v (%v)", r.sql, got, want, werr)
					}
					continue
				}
				if pgCode(err) != "0A000" || !strings.Contains(err.Error(), r.column) {
					t.Errorf("%s: got %v, want 0A000 naming %s", r.sql, err, r.column)
				}
			}
			// The server holds only ciphertexts; an updated row's other
			// onions are NULL (stale) beside its Add cell.
			direct := db.direct(t)
			var stale int
			if err := direct.QueryRow(ctx, `SELECT count(*) FROM inc WHERE bal__eq IS NULL AND bal__ord IS NULL AND bal__add IS NOT NULL`).Scan(&stale); err != nil {
				t.Fatal(err)
			}
			if stale == 0 {
				t.Error("no row holds bal only in its Add onion: the increments did not run on the server")
			}
		})
	}
}
