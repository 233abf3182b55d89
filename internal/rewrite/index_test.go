package rewrite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// ddlIndexes returns the indexes of a table as "name: definition".
func ddlIndexes(ctx context.Context, t *testing.T, conn *pgx.Conn, table string) []string {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename = $1 ORDER BY 1", table)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ddlRunIndex runs PlanIndex's result: as one query string, or one
// statement at a time for CONCURRENTLY (which PostgreSQL refuses in the
// implicit transaction of a multi-statement string).
func ddlRunIndex(ctx context.Context, conn *pgx.Conn, sql string) error {
	stmts, err := Parse(sql)
	if err != nil {
		return err
	}
	if !strings.Contains(sql, "CONCURRENTLY") {
		_, err := conn.Exec(ctx, sql)
		return err
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s.SQL); err != nil {
			return err
		}
	}
	return nil
}

// TestPlanIndexGolden plans every statement of testdata/index.txt on fresh
// copies of acc and pl, runs the result and records the plan and the
// indexes it created (from pg_indexes) in testdata/index.golden.
func TestPlanIndexGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "index.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tables := map[string]*CreatePlan{"acc": ddlPlan(t, ddlAccSQL), "pl": ddlPlan(t, ddlPlSQL)}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		st := ddlParse(t, line)
		cp := tables[ddlTarget(st)]
		if cp == nil {
			t.Fatalf("%s: no such test table", line)
		}
		snapshot := ddlCopyTable(cp.Table)
		sql, err := PlanIndex(st, cp.Table)
		fmt.Fprintf(&out, "-- %s\n", line)
		if !reflect.DeepEqual(snapshot, cp.Table) {
			t.Errorf("%s: PlanIndex changed the table it was given", line)
		}
		if err != nil {
			fmt.Fprintf(&out, "%s\n\n", ddlError(err))
			continue
		}
		if sql == st.SQL {
			out.WriteString("(unchanged)\n")
		} else {
			fmt.Fprintf(&out, "%s\n", sql)
		}
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS acc, pl; "+tables["acc"].SQL+"; "+tables["pl"].SQL); err != nil {
			t.Fatal(err)
		}
		before := ddlIndexes(ctx, t, conn, cp.Table.Physical)
		if err := ddlRunIndex(ctx, conn, sql); err != nil {
			t.Errorf("%s: the server rejects the rewritten statement %q: %v", line, sql, err)
			fmt.Fprintf(&out, "  server: %v\n\n", err)
			continue
		}
		out.WriteString(ddlDiff("index", before, ddlIndexes(ctx, t, conn, cp.Table.Physical)))
		out.WriteString("\n")
	}
	checkGolden(t, "index.golden", out.String())
}

// TestPlanIndexOnions checks which onion columns indexes land on, and
// that a UNIQUE index over a DET Eq onion enforces uniqueness of the
// plaintexts (equal DET ciphertexts) with PostgreSQL's unique violation.
func TestPlanIndexOnions(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cp := planTable(t, conn, ddlAccSQL)
	// balance's Eq onion peeled to DET: a UNIQUE index is now allowed.
	peeled := ddlCopyTable(cp.Table)
	peeled.Column("balance").Onions["eq"] = "det"
	var pe *pgconn.PgError
	for _, tc := range []struct {
		sql     string
		table   bool // plan against the peeled table
		columns map[string][]string
	}{
		{"CREATE INDEX i1 ON acc (balance)", false, map[string][]string{"i1": {"balance__eq"}, "i1_ord": {"balance__ord"}}},
		{"CREATE INDEX i2 ON acc (owner)", false, map[string][]string{"i2": {"owner__eq"}}},
		{"CREATE INDEX i3 ON acc USING gin (owner)", false, map[string][]string{"i3": {"owner__srch"}}},
		{"CREATE INDEX i4 ON acc (id, owner, note_plain)", false, map[string][]string{"i4": {"id", "owner__eq", "note_plain"}}},
		{"CREATE UNIQUE INDEX i5 ON acc (balance)", true, map[string][]string{"i5": {"balance__eq"}, "i5_ord": {"balance__ord"}}},
	} {
		st := ddlParse(t, tc.sql)
		table := cp.Table
		if tc.table {
			table = peeled
		}
		sql, err := PlanIndex(st, table)
		if err != nil {
			t.Errorf("%s: %v", tc.sql, err)
			continue
		}
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Errorf("%s: %s: %v", tc.sql, sql, err)
			continue
		}
		for name, want := range tc.columns {
			rows, err := conn.Query(ctx, `SELECT a.attname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
				CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY k(attnum, n)
				JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
				WHERE i.relname = $1 ORDER BY k.n`, name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: index %s is on %v, want %v", tc.sql, name, got, want)
			}
		}
	}
	// CONCURRENTLY statements must run one at a time: PostgreSQL refuses
	// them in the implicit transaction of a multi-statement string.
	sql, err := PlanIndex(ddlParse(t, "CREATE INDEX CONCURRENTLY i6 ON acc (balance)"), cp.Table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, sql); !errors.As(err, &pe) || pe.Code != "25001" {
		t.Errorf("%s as one string: %v", sql, err)
	}
	if err := ddlRunIndex(ctx, conn, sql); err != nil {
		t.Errorf("%s one at a time: %v", sql, err)
	}
	// The unique index i5 is on balance__eq and rejects a duplicate DET
	// ciphertext; the ord companion i5_ord is not unique.
	var unique bool
	if err := conn.QueryRow(ctx, "SELECT indisunique FROM pg_index WHERE indexrelid = 'i5_ord'::regclass").Scan(&unique); err != nil || unique {
		t.Errorf("i5_ord unique %v, %v", unique, err)
	}
	insert := `INSERT INTO acc (pgonion_salt, id, owner__eq, balance__eq, balance__ord) VALUES ('\x00000000000000000000000000000000', $1, '\x01', '\x0102', $2)`
	if _, err := conn.Exec(ctx, insert, 1, []byte{1}); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, insert, 2, []byte{2})
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Errorf("duplicate DET ciphertext in a UNIQUE index: %v", err)
	}
}

// TestPlanIndexUnmanaged checks the pass-through cases.
func TestPlanIndexUnmanaged(t *testing.T) {
	const sql = "CREATE INDEX ON other (owner)"
	if got, err := PlanIndex(ddlParse(t, sql), nil); err != nil || got != sql {
		t.Errorf("unmanaged table: %q, %v", got, err)
	}
	cp := ddlPlan(t, ddlAccSQL)
	if _, err := PlanIndex(ddlParse(t, sql), cp.Table); err == nil {
		t.Error("an index on another table was planned against acc")
	}
	if _, err := PlanIndex(ddlParse(t, "SELECT 1"), cp.Table); err == nil {
		t.Error("SELECT planned as an index")
	}
	if got := ddlDerivedName(strings.Repeat("é", 40), IndexOrdSuffix); len(got) > 63 || !strings.HasSuffix(got, IndexOrdSuffix) || !strings.HasPrefix(got, "é") {
		t.Errorf("derived name %q (%d bytes)", got, len(got))
	}
}
