package rewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// planTable creates the physical table for sql and returns its plan.
func planTable(t *testing.T, conn *pgx.Conn, sql string) *CreatePlan {
	t.Helper()
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanCreate(stmts[0], "public", testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), p.SQL); err != nil {
		t.Fatal(err)
	}
	return p
}

func holeString(h Hole) string {
	switch {
	case h.Param > 0:
		return fmt.Sprintf("%d:%s=$%d", h.Row, h.Column.Name, h.Param)
	case h.Const != nil:
		return fmt.Sprintf("%d:%s=%q", h.Row, h.Column.Name, *h.Const)
	case h.Expr != nil:
		return fmt.Sprintf("%d:%s=<expression>", h.Row, h.Column.Name)
	}
	return fmt.Sprintf("%d:%s=NULL", h.Row, h.Column.Name)
}

func TestPlanInsert(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ct := planTable(t, conn, "CREATE TABLE acc (id int PRIMARY KEY, owner text, balance numeric(12,2), note_plain text)")
	for _, tc := range []struct {
		sql   string
		holes string // the holes, or "ERROR code: message"
		rows  int    // rows the server must hold afterwards (cumulative)
	}{
		{"INSERT INTO acc VALUES (1, 'ann', 10.5, 'n1')", `0:owner="ann" 0:balance="10.5"`, 1},
		{"INSERT INTO acc (id, balance, owner) VALUES (2, -3, E'b\\'o'), (3, NULL, DEFAULT)", `0:balance="-3" 0:owner="b'o" 1:balance=NULL 1:owner=NULL`, 3},
		{"INSERT INTO acc (owner, id) VALUES ('x'::text, 4)", `0:owner="x"`, 4},
		{"INSERT INTO acc VALUES ($1, $2, $3, $4)", `0:owner=$2 0:balance=$3`, 5},
		{"INSERT INTO acc (id, note_plain) VALUES (6, upper('plain ok'))", ``, 6},
		{"INSERT INTO acc VALUES (7, upper(note_plain), 1, '')", `ERROR 0A000: expression in INSERT into encrypted column acc.owner: only constants, parameters, NULL and constant expressions the proxy computes are supported`, 6},
		{"INSERT INTO acc SELECT * FROM acc", `ERROR 0A000: INSERT ... SELECT into table acc with encrypted columns is not supported; use INSERT ... VALUES`, 6},
		{"INSERT INTO acc VALUES (8, 'x', 1, '') RETURNING owner", `0:owner="x" 0:balance="1"`, 7},
		{"INSERT INTO acc VALUES (9, 'x', 1, '', 5)", `ERROR 42601: INSERT has more expressions than target columns`, 7},
		{"INSERT INTO acc (id, pgonion_salt) VALUES (10, '\\x00')", `ERROR 0A000: INSERT into column acc.pgonion_salt is not supported: the proxy alone writes it`, 7},
		{"INSERT INTO acc (id, balance__eq) VALUES (10, '\\x00')", `ERROR 0A000: INSERT into column acc.balance__eq is not supported: the proxy alone writes it`, 7},
		{"INSERT INTO acc VALUES ($1, $1, 1, '')", `ERROR 0A000: parameter $1 is the value of encrypted column acc.owner and is also used elsewhere in the statement, where the server would see it; use a separate parameter`, 7},
		{"INSERT INTO acc (id, note_plain) VALUES (13, (SELECT a::text FROM acc a LIMIT 1))", `ERROR 0A000: whole-row reference a to table acc with encrypted columns in VALUES is not supported`, 7},
		{"INSERT INTO acc (id, note_plain) VALUES (13, (SELECT max(owner) FROM acc))", `ERROR 0A000: expression over encrypted column acc.owner in VALUES is not supported yet`, 7},
		{"INSERT INTO acc VALUES (11, 'x', 1, ''), (12, 'y', 2, '') LIMIT 1", `ERROR 0A000: WITH, ORDER BY, LIMIT and OFFSET on the VALUES of an INSERT into table acc with encrypted columns are not supported`, 7},
	} {
		stmts, err := Parse(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanInsert(stmts[0], ct.Table)
		var got string
		if err != nil {
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				t.Fatalf("%s: %v", tc.sql, err)
			}
			got = "ERROR " + pe.Code + ": " + pe.Message
		} else {
			var hs []string
			for _, h := range p.Holes {
				hs = append(hs, holeString(h))
			}
			got = strings.Join(hs, " ")
		}
		if got != tc.holes {
			t.Errorf("%s:\n got %s\nwant %s", tc.sql, got, tc.holes)
			continue
		}
		if err != nil {
			continue
		}
		// Render with stand-in ciphertexts (the hole's text as bytes) and
		// run it: the physical statement must be valid SQL for the table.
		cells := make([]Cells, len(p.Holes))
		var args []any
		for i, h := range p.Holes {
			cells[i] = Cells{}
			_, layout, err := columnLayout(h.Column)
			if err != nil {
				t.Fatal(err)
			}
			for _, pc := range layout {
				switch {
				case h.Const == nil && h.Param == 0:
				case h.Param > 0 && pc.Suffix == "_eq":
					// Extended protocol: the engine binds the ciphertext
					// as a parameter; here the client's own.
					cells[i][pc.Suffix] = ParamNode(h.Param)
				case pc.Kind == onion.KindSearch:
					cells[i][pc.Suffix] = Int8ArrayLiteral([]int64{1, -2})
				default:
					cells[i][pc.Suffix] = ByteaLiteral([]byte("ct:" + holeString(h)))
				}
			}
		}
		salts := make([]*pg_query.Node, p.Rows)
		for r := range salts {
			salts[r] = ByteaLiteral(bytes.Repeat([]byte{byte(r)}, 16))
		}
		sql, err := p.Render(cells, salts)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(tc.sql, "$1") {
			args = []any{5, []byte("ct-owner5"), []byte("ct-1.00"), "n"}
		}
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: the server rejects %q: %v", tc.sql, sql, err)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM acc").Scan(&n); err != nil || n != tc.rows {
			t.Fatalf("%s: %d rows, %v", tc.sql, n, err)
		}
		if strings.Contains(sql, "'ann'") || strings.Contains(sql, "10.5") {
			t.Fatalf("plaintext of an encrypted column in the server SQL: %s", sql)
		}
	}
}

// TestInsertDefaultValues: DEFAULT VALUES still gives the row its salt.
func TestInsertDefaultValues(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ct := planTable(t, conn, "CREATE TABLE dv (k_plain serial PRIMARY KEY, owner text)")
	stmts, err := Parse("INSERT INTO dv DEFAULT VALUES RETURNING *")
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanInsert(stmts[0], ct.Table)
	if err != nil {
		t.Fatal(err)
	}
	sql, err := p.Render(nil, []*pg_query.Node{dmlTestSalt(7)})
	if err != nil {
		t.Fatal(err)
	}
	const want = "INSERT INTO dv (pgonion_salt) VALUES (E'\\\\x07070707070707070707070707070707'::bytea) RETURNING dv.k_plain AS k_plain, dv.owner__eq AS owner, dv.owner__salt, dv.pgonion_salt"
	if sql != want {
		t.Fatalf("got  %s\nwant %s", sql, want)
	}
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		t.Fatal(err)
	}
	checkProjection(t, sql, p.Returning, rows.FieldDescriptions())
	rows.Close()
	var k int
	var salt []byte
	if err := conn.QueryRow(ctx, "SELECT k_plain, pgonion_salt FROM dv WHERE owner__eq IS NULL").Scan(&k, &salt); err != nil || k != 1 || string(salt) != strings.Repeat("\x07", 16) {
		t.Fatalf("row %d salt %x, %v", k, salt, err)
	}
}

func TestPlanInsertConflictGolden(t *testing.T) {
	runDMLGolden(t, "conflict", dmlTestSeed, func(st Statement, table *catalog.Table) (dmlGoldenResult, error) {
		p, err := PlanInsert(st, table)
		if err != nil {
			return dmlGoldenResult{}, err
		}
		sql, err := p.Render(dmlTestCells(t, p.Holes), dmlTestInsertSalts(p))
		if err != nil {
			t.Fatal(err)
		}
		return dmlGoldenResult{sql: sql, holes: p.Holes, returning: p.Returning}, nil
	})
}

// TestPlanInsertConflictEffects runs rewritten INSERT ... ON CONFLICT
// statements and checks what they do to the physical cells: a duplicate
// DET key is skipped by DO NOTHING, DO UPDATE writes exactly the cells it
// should, with the right salt overrides.
func TestPlanInsertConflictEffects(t *testing.T) {
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
	hexCT := func(column, suffix, value string) string {
		return fmt.Sprintf(`\x%x`, dmlTestCiphertext(column, suffix, value))
	}
	for _, tc := range []struct {
		sql     string
		rows    int64
		changed string            // the physical cells that change
		values  map[string]string // some of them, as to_jsonb shows them
	}{
		// The seeded row 1 has email ann@x: DET makes the duplicate visible.
		{"INSERT INTO acc (id, email) VALUES (10, 'ann@x'), (11, 'new@x') ON CONFLICT DO NOTHING", 1,
			"11:balance__add 11:balance__eq 11:balance__ord 11:balance__salt 11:email__eq 11:email__salt 11:id 11:n__eq 11:n__salt 11:n__val 11:note_plain 11:owner__eq 11:owner__salt 11:owner__srch 11:pgonion_salt",
			map[string]string{"11:email__eq": hexCT("email", "_eq", "new@x"), "11:pgonion_salt": `\x22222222222222222222222222222222`}},
		{"INSERT INTO acc (id, email) VALUES (10, 'ann@x') ON CONFLICT (email) DO NOTHING", 0, "", nil},
		{"INSERT INTO acc (id, email) VALUES (10, 'ann@x') ON CONFLICT (email) DO UPDATE SET note_plain = 'dup'", 1,
			"1:note_plain", map[string]string{"1:note_plain": "dup"}},
		// EXCLUDED's cells used the inserted row's salt (\x2121): it
		// becomes the salt override; the row keeps its own salt.
		{"INSERT INTO acc AS a (id, owner, balance) VALUES (1, 'o2', 7) ON CONFLICT (id) DO UPDATE SET owner = EXCLUDED.owner, note_plain = a.note_plain || '+'", 1,
			"1:note_plain 1:owner__eq 1:owner__salt 1:owner__srch",
			map[string]string{"1:owner__eq": hexCT("owner", "_eq", "o2"), "1:owner__salt": `\x21212121212121212121212121212121`, "1:note_plain": "n1+"}},
		{"INSERT INTO acc (id, owner) VALUES (1, 'o'), (2, 'p'), (20, 'q') ON CONFLICT (id) DO UPDATE SET owner = 'k', n = NULL", 3,
			"1:n__eq 1:n__salt 1:n__val 1:owner__eq 1:owner__salt 1:owner__srch " +
				"20:balance__add 20:balance__eq 20:balance__ord 20:balance__salt 20:email__eq 20:email__salt 20:id 20:n__eq 20:n__salt 20:n__val 20:note_plain 20:owner__eq 20:owner__salt 20:owner__srch 20:pgonion_salt " +
				"2:n__salt 2:owner__eq 2:owner__salt 2:owner__srch",
			map[string]string{"1:owner__eq": hexCT("owner", "_eq", "k"), "1:owner__salt": `\xcccccccccccccccccccccccccccccccc`, "2:owner__salt": `\xcccccccccccccccccccccccccccccccc`,
				"20:owner__eq": hexCT("owner", "_eq", "q"), "20:pgonion_salt": `\x23232323232323232323232323232323`}},
		{"INSERT INTO acc (id, owner) VALUES (1, 'o') ON CONFLICT (id) DO UPDATE SET owner = 'k' WHERE acc.note_plain = 'no such note'", 0, "", nil},
	} {
		stmts, err := Parse(tc.sql)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanInsert(stmts[0], ct.Table)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		var salts []*pg_query.Node
		for r := range p.Rows {
			salts = append(salts, dmlTestSalt(byte(0x21+r)))
		}
		if p.ConflictSalt {
			salts = append(salts, dmlTestSalt(0xcc))
		}
		sql, err := p.Render(dmlTestCells(t, p.Holes), salts)
		if err != nil {
			t.Fatal(err)
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := dmlSnapshot(t, tx)
		tag, err := tx.Exec(ctx, sql)
		if err != nil {
			t.Fatalf("%s: the server rejects %q: %v", tc.sql, sql, err)
		}
		after := dmlSnapshot(t, tx)
		if got := dmlChanged(before, after); got != tc.changed || tag.RowsAffected() != tc.rows {
			t.Errorf("%s: %d rows, changed %s\nwant %d rows, changed %s", tc.sql, tag.RowsAffected(), got, tc.rows, tc.changed)
		}
		for k, want := range tc.values {
			if got := fmt.Sprint(after[k]); got != want {
				t.Errorf("%s: %s = %s, want %s", tc.sql, k, got, want)
			}
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
