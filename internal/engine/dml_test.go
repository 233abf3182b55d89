package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// dmlWorkload is run through the proxy on an encrypted table and directly
// on a plaintext one; every statement's rows and tags must agree. Columns
// id and grp are plain (WHERE works on them); the rest are encrypted.
var dmlWorkload = []struct {
	sql  string
	args []any
}{
	{"INSERT INTO acc (id, grp, owner, balance, note) VALUES (1, 'a', 'alice', 10.50, 'first'), (2, 'a', 'bob', NULL, NULL), (3, 'b', 'carol', -3.25, 'x')", nil},
	{"INSERT INTO acc (id, grp, owner, balance, note) VALUES ($1, $2, $3, $4, $5) RETURNING *", []any{4, "b", "dave", "99.99", "param"}},
	{"INSERT INTO acc (id, grp, owner) VALUES (5, 'c', 'eve') RETURNING owner, id AS ident, balance", nil},
	{"UPDATE acc SET owner = 'ALICE', balance = 11.00 WHERE id = 1", nil},
	{"UPDATE acc SET note = $1 WHERE grp = $2 RETURNING id, note", []any{"grp b note", "b"}},
	{"UPDATE acc SET balance = NULL, grp = 'z' WHERE id = 3 RETURNING *", nil},
	{"UPDATE acc SET (owner, note) = ('bobby', 'multi') WHERE id = 2", nil},
	{"SELECT * FROM acc", nil},
	{"DELETE FROM acc WHERE id = 5 RETURNING owner, balance", nil},
	{"DELETE FROM acc WHERE grp = $1", []any{"nope"}},
	{"INSERT INTO acc (id, grp, owner) VALUES (1, 'dup', 'clash') ON CONFLICT (email) DO NOTHING", nil},
	{"INSERT INTO acc (id, grp, owner, email) VALUES (6, 'e', 'frank', 'f@x.org')", nil},
	{"INSERT INTO acc (id, grp, owner, email) VALUES (7, 'e', 'frank2', 'f@x.org') ON CONFLICT (email) DO NOTHING", nil},
	{"INSERT INTO acc (id, grp, owner, email) VALUES (8, 'e', 'frank3', 'f@x.org') ON CONFLICT (email) DO UPDATE SET owner = EXCLUDED.owner, grp = 'upserted' RETURNING id, owner, grp", nil},
	{"INSERT INTO acc (id, grp, owner, email) VALUES (9, 'e', 'x', $1) ON CONFLICT (email) DO UPDATE SET note = $2 RETURNING note", []any{"f@x.org", "conflict note"}},
	{"SELECT owner, note, email, balance FROM acc", nil},
	{"DELETE FROM acc RETURNING *", nil},
	{"SELECT * FROM acc", nil},
}

const accDDL = "CREATE TABLE acc (id int, grp text, owner text, balance numeric(10,2), note text, email text UNIQUE)"

func plainIDGrp(table, column string) rewrite.ColumnPolicy {
	if column == "id" || column == "grp" {
		return rewrite.ColumnPolicy{Policy: catalog.Plain}
	}
	return rewrite.ColumnPolicy{Policy: catalog.Encrypted}
}

func TestDMLDifferential(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, plainIDGrp)
	for _, mode := range allModes {
		t.Run(mode.String(), func(t *testing.T) {
			enc := p.connect(t, mode)
			plainDB := newEncDB(t)
			plain := plainDB.direct(t)
			mustExec(t, enc, "DROP TABLE IF EXISTS acc")
			mustExec(t, enc, accDDL)
			mustExec(t, plain, accDDL)
			for _, w := range dmlWorkload {
				got, gerr := runSorted(ctx, enc, mode, w.sql, w.args)
				want, werr := runSorted(ctx, plain, mode, w.sql, w.args)
				if (gerr != nil) != (werr != nil) {
					t.Fatalf("%s: error through the proxy %v, directly %v", w.sql, gerr, werr)
				}
				if w.sql == "SELECT owner, note, email, balance FROM acc" && len(got) != 7 {
					t.Fatalf("%s: %d rows through the proxy, want 6: %v", w.sql, len(got)-1, got)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s:\n got %v\nwant %v", w.sql, got, want)
				}
			}
		})
	}
}

// runSorted runs a statement and returns its tag and its rows as sorted
// text.
func runSorted(ctx context.Context, c *pgx.Conn, mode pgx.QueryExecMode, sql string, args []any) ([]string, error) {
	rows, err := c.Query(ctx, sql, append([]any{mode}, args...)...)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("%v", vals))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return append(out, "tag: "+strings.TrimSpace(rows.CommandTag().String())), nil
}
