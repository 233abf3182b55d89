package rewrite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/pgtest"
)

// The tables the DDL tests alter: acc has plain, encrypted (one with a
// DET Eq onion, email) and sensitive columns; pl is a catalog table with
// plain columns only (so it has no salt column).
const (
	ddlAccSQL = "CREATE TABLE acc (id int PRIMARY KEY, owner text NOT NULL, balance numeric(12,2), email text UNIQUE, secret_ssn text, note_plain text)"
	ddlPlSQL  = "CREATE TABLE pl (id int PRIMARY KEY, note_plain text)"
)

// ddlPlan plans a CREATE TABLE without running it.
func ddlPlan(t *testing.T, sql string) *CreatePlan {
	t.Helper()
	stmts, err := Parse(sql)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanCreate(stmts[0], "public", testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ddlParse parses one statement.
func ddlParse(t *testing.T, sql string) Statement {
	t.Helper()
	stmts, err := Parse(sql)
	if err != nil || len(stmts) != 1 {
		t.Fatalf("%s: %v", sql, err)
	}
	return stmts[0]
}

// ddlTarget is the table an ALTER statement names.
func ddlTarget(st Statement) string {
	n := st.Tree.Stmt
	switch {
	case n.GetAlterTableStmt() != nil:
		return n.GetAlterTableStmt().Relation.Relname
	case n.GetRenameStmt() != nil:
		return n.GetRenameStmt().Relation.Relname
	case n.GetAlterObjectSchemaStmt() != nil:
		return n.GetAlterObjectSchemaStmt().Relation.Relname
	case n.GetIndexStmt() != nil:
		return n.GetIndexStmt().Relation.Relname
	}
	return ""
}

// ddlError formats a planning error as the golden files show it.
func ddlError(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return "ERROR " + pe.Code + ": " + pe.Message
	}
	return "ERROR " + err.Error()
}

// ddlDescribeTable lists a catalog table's columns.
func ddlDescribeTable(t *catalog.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  table %s.%s (physical %s)\n", t.Schema, t.Name, t.Physical)
	for _, c := range t.Columns {
		var onions []string
		for k, v := range c.Onions {
			onions = append(onions, k+"="+v)
		}
		sort.Strings(onions)
		fmt.Fprintf(&b, "  %d %s %s %s [%s] {%s}%s\n", c.Position, c.Name, c.Type, c.Policy, strings.Join(c.Capabilities, ","), strings.Join(onions, ","), columnNotes(&c))
	}
	return b.String()
}

// ddlPhysical returns the physical columns of a table as
// "name type [NOT NULL] [DEFAULT d]", in order.
func ddlPhysical(ctx context.Context, t *testing.T, q pgx.Tx, table string) []string {
	t.Helper()
	rows, err := q.Query(ctx, `SELECT column_name, udt_name, is_nullable = 'NO', coalesce(column_default, '')
		FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, table)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var name, typ, def string
		var notNull bool
		if err := rows.Scan(&name, &typ, &notNull, &def); err != nil {
			t.Fatal(err)
		}
		s := name + " " + typ
		if notNull {
			s += " NOT NULL"
		}
		if def != "" {
			s += " DEFAULT " + def
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ddlConstraints returns the constraints of a table as "name: definition".
func ddlConstraints(ctx context.Context, t *testing.T, q pgx.Tx, table string) []string {
	t.Helper()
	rows, err := q.Query(ctx, `SELECT conname || ': ' || pg_get_constraintdef(c.oid) FROM pg_constraint c
		JOIN pg_class r ON r.oid = c.conrelid JOIN pg_namespace n ON n.oid = r.relnamespace
		WHERE n.nspname = 'public' AND r.relname = $1 ORDER BY 1`, table)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ddlDiff lists what was removed (-) and added (+) from before to after.
func ddlDiff(label string, before, after []string) string {
	var b strings.Builder
	for _, s := range before {
		if !slices.Contains(after, s) {
			fmt.Fprintf(&b, "  %s - %s\n", label, s)
		}
	}
	for _, s := range after {
		if !slices.Contains(before, s) {
			fmt.Fprintf(&b, "  %s + %s\n", label, s)
		}
	}
	return b.String()
}

// ddlExpectedPhysical is the set of physical column names a catalog table
// implies. The salt column is reported separately: it may outlive the
// encrypted columns.
func ddlExpectedPhysical(t *testing.T, ct *catalog.Table) (names []string, needSalt bool) {
	t.Helper()
	for i := range ct.Columns {
		c := &ct.Columns[i]
		if c.Policy == catalog.Plain {
			names = append(names, c.Name)
			continue
		}
		needSalt = true
		_, layout, err := columnLayout(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, pc := range layout {
			names = append(names, pc.Name)
		}
	}
	sort.Strings(names)
	return names, needSalt
}

// ddlCheckConsistent fails the test when the physical table does not have
// exactly the columns the catalog table implies.
func ddlCheckConsistent(ctx context.Context, t *testing.T, tx pgx.Tx, what string, ct *catalog.Table) {
	t.Helper()
	want, needSalt := ddlExpectedPhysical(t, ct)
	var got []string
	hasSalt := false
	for _, s := range ddlPhysical(ctx, t, tx, ct.Physical) {
		name := strings.Fields(s)[0]
		if name == SaltColumn {
			hasSalt = true
			continue
		}
		got = append(got, name)
	}
	sort.Strings(got)
	if !slices.Equal(got, want) || (needSalt && !hasSalt) {
		t.Errorf("%s: physical table %s has columns %v (salt %v), the catalog implies %v (salt %v)", what, ct.Physical, got, hasSalt, want, needSalt)
	}
}

// TestPlanAlterGolden plans every statement of testdata/alter.txt against
// fresh copies of the tables acc and pl, runs the result on PostgreSQL,
// and records the plan, the new catalog table and the physical changes
// (columns and constraints) in testdata/alter.golden. It also checks that
// the physical table matches the new catalog table exactly.
func TestPlanAlterGolden(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "alter.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA s1; CREATE TABLE other (x int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	tables := map[string]*CreatePlan{"acc": ddlPlan(t, ddlAccSQL), "pl": ddlPlan(t, ddlPlSQL)}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		st := ddlParse(t, line)
		cp := tables[ddlTarget(st)]
		if cp == nil {
			t.Fatalf("%s: no such test table", line)
		}
		snapshot := ddlCopyTable(cp.Table)
		plan, err := PlanAlter(st, cp.Table, testPolicy)
		fmt.Fprintf(&out, "-- %s\n", line)
		if !reflect.DeepEqual(snapshot, cp.Table) {
			t.Errorf("%s: PlanAlter changed the table it was given", line)
		}
		if err != nil {
			fmt.Fprintf(&out, "%s\n\n", ddlError(err))
			continue
		}
		if len(plan.PlainForKeys) > 0 {
			// The engine stores the columns plain first, then plans again.
			fmt.Fprintf(&out, "PLAIN FOR FOREIGN KEY %v REFERENCES %s %v\n\n", plan.PlainForKeys, plan.References.Name, plan.Referenced)
			continue
		}
		fmt.Fprintf(&out, "%s\n", plan.SQL)
		if plan.Table == nil {
			out.WriteString("  catalog: unchanged\n")
		} else {
			out.WriteString(ddlDescribeTable(plan.Table))
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, sql := range []string{tables["acc"].SQL, tables["pl"].SQL,
			"INSERT INTO pl VALUES (1, 'a'), (2, NULL)"} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				t.Fatal(err)
			}
		}
		physBefore := ddlPhysical(ctx, t, tx, cp.Table.Physical)
		consBefore := ddlConstraints(ctx, t, tx, cp.Table.Physical)
		if _, err := tx.Exec(ctx, plan.SQL); err != nil {
			t.Errorf("%s: the server rejects the rewritten statement %q: %v", line, plan.SQL, err)
			fmt.Fprintf(&out, "  server: %v\n\n", err)
			_ = tx.Rollback(ctx)
			continue
		}
		final := cp.Table
		if plan.Table != nil {
			final = plan.Table
		}
		out.WriteString(ddlDiff("column", physBefore, ddlPhysical(ctx, t, tx, final.Physical)))
		out.WriteString(ddlDiff("constraint", consBefore, ddlConstraints(ctx, t, tx, final.Physical)))
		ddlCheckConsistent(ctx, t, tx, line, final)
		out.WriteString("\n")
		_ = tx.Rollback(ctx)
	}
	checkGolden(t, "alter.golden", out.String())
}

// TestPlanAlterRenameColumn checks with information_schema that renaming
// an encrypted column renames every physical column, and that the column
// keeps its id (so its keys) in the catalog.
func TestPlanAlterRenameColumn(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cp := planTable(t, conn, ddlAccSQL)
	cp.Table.Columns[2].ID = catalog.NewID() // balance, as if recorded
	plan, err := PlanAlter(ddlParse(t, "ALTER TABLE acc RENAME COLUMN balance TO amount"), cp.Table, testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, plan.SQL); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND table_name = 'acc' AND (column_name LIKE 'balance%' OR column_name LIKE 'amount%') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"amount__add", "amount__eq", "amount__ord", "amount__salt"}
	if !slices.Equal(got, want) {
		t.Errorf("physical columns after rename: %v, want %v", got, want)
	}
	c := plan.Table.Column("amount")
	if c == nil || c.ID != cp.Table.Columns[2].ID || plan.Table.Column("balance") != nil {
		t.Errorf("catalog after rename: %+v", plan.Table.Columns)
	}
	if cp.Table.Column("balance") == nil {
		t.Error("the original table was changed")
	}
}

// TestPlanAlterAddsSalt adds an encrypted column to a catalog table that
// has rows and no encrypted column yet: every existing row must get a
// distinct 16-byte salt, and the salt column must keep no default (later
// rows get theirs from the proxy).
func TestPlanAlterAddsSalt(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cp := planTable(t, conn, ddlPlSQL)
	if _, err := conn.Exec(ctx, "INSERT INTO pl SELECT g, 'n' FROM generate_series(1, 100) g"); err != nil {
		t.Fatal(err)
	}
	plan, err := PlanAlter(ddlParse(t, "ALTER TABLE pl ADD COLUMN owner text, ADD COLUMN amount int"), cp.Table, testPolicy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, plan.SQL); err != nil {
		t.Fatalf("%s: %v", plan.SQL, err)
	}
	var n, distinct, sized int
	var def *string
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT pgonion_salt), count(*) FILTER (WHERE length(pgonion_salt) = 16),
		(SELECT column_default FROM information_schema.columns WHERE table_name = 'pl' AND column_name = 'pgonion_salt') FROM pl`).Scan(&n, &distinct, &sized, &def); err != nil {
		t.Fatal(err)
	}
	if n != 100 || distinct != 100 || sized != 100 || def != nil {
		t.Errorf("rows %d, distinct salts %d, 16-byte salts %d, default %v", n, distinct, sized, def)
	}
	// A row inserted without a salt is rejected: no default is left.
	if _, err := conn.Exec(ctx, "INSERT INTO pl (id) VALUES (1000)"); err == nil {
		t.Error("a row without salt was accepted")
	}
	// Positions follow the existing columns; ids are left to the catalog.
	for _, c := range plan.Table.Columns {
		if c.Name == "owner" && (c.Position != 3 || c.ID != (catalog.ID{})) || c.Name == "amount" && c.Position != 4 {
			t.Errorf("new column %s: position %d, id %s", c.Name, c.Position, c.ID)
		}
	}
}

// TestPlanAlterNotATable checks the statements PlanAlter does not plan.
func TestPlanAlterNotATable(t *testing.T) {
	cp := ddlPlan(t, ddlAccSQL)
	for _, sql := range []string{
		"ALTER INDEX acc_pkey RENAME TO x",
		"ALTER VIEW acc RENAME TO x",
		"ALTER SEQUENCE acc OWNED BY NONE",
		"SELECT 1",
		"ALTER TABLE other ADD COLUMN x int",
	} {
		p, err := PlanAlter(ddlParse(t, sql), cp.Table, testPolicy)
		if err == nil {
			t.Errorf("%s: planned as %+v", sql, p)
			continue
		}
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			t.Errorf("%s: want an internal error, got refusal %v", sql, err)
		}
	}
	// A table the proxy does not manage passes through.
	p, err := PlanAlter(ddlParse(t, "ALTER TABLE other ADD COLUMN owner text"), nil, testPolicy)
	if err != nil || p.SQL != "ALTER TABLE other ADD COLUMN owner text" || p.Table != nil {
		t.Errorf("unmanaged table: %+v, %v", p, err)
	}
}
