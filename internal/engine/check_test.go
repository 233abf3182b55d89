package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestCheckConstraints: CHECK constraints over encrypted columns (the
// proxy evaluates them) accept and refuse exactly the writes plaintext
// PostgreSQL does, with its SQLSTATE and constraint names, in every
// protocol mode, with literals and parameters, in INSERT, UPDATE and
// COPY; the table ends up with the same rows.
func TestCheckConstraints(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plain := plainConn(t)
	const ddl = `CREATE TABLE log (id int PRIMARY KEY, flag smallint NOT NULL CHECK (flag >= 0),
		qty int CHECK (qty BETWEEN 1 AND 10), note text CHECK (note <> ''), lo int, hi int,
		CONSTRAINT range_ok CHECK (lo <= hi), CHECK (hi - lo < 100 OR hi IS NULL))`
	mustExec(t, p.connect(t, pgx.QueryExecModeSimpleProtocol), ddl)
	mustExec(t, plain, ddl)
	type stmt struct {
		sql  string
		args []any
	}
	var stmts []stmt
	id := 0
	for _, row := range [][]any{
		{0, 5, "a", 1, 2},
		{-1, 5, "a", 1, 2},
		{1, nil, nil, nil, 2},
		{1, 11, "x", 1, 1},
		{1, 2, "", 1, 1},
		{1, 2, "y", 3, 2},
		{1, 10, "y", 1, 9},
		{32767, 1, "z", -5, -5},
	} {
		id++
		lit := make([]string, len(row))
		for i, v := range row {
			switch v := v.(type) {
			case nil:
				lit[i] = "NULL"
			case string:
				lit[i] = "'" + v + "'"
			default:
				lit[i] = fmt.Sprint(v)
			}
		}
		stmts = append(stmts,
			stmt{sql: fmt.Sprintf("INSERT INTO log VALUES (%d, %s)", id, strings.Join(lit, ", "))},
			stmt{sql: "INSERT INTO log VALUES ($1, $2, $3, $4, $5, $6)", args: append([]any{100 + id}, row...)})
	}
	stmts = append(stmts,
		stmt{sql: "INSERT INTO log VALUES (50, 1, 2, 'y', 1, 2), (51, -5, 2, 'y', 1, 2)"},
		stmt{sql: "INSERT INTO log VALUES (52, 1, 2, 'y', 1, 2), (53, 5, 2, 'y', 1, 2)"},
		stmt{sql: "INSERT INTO log (id, flag) VALUES (54, 3)"},
		stmt{sql: "INSERT INTO log (id, flag, note) VALUES ($1, $2, $3)", args: []any{55, 3, ""}},
		stmt{sql: "UPDATE log SET flag = -2 WHERE id = 1"},
		stmt{sql: "UPDATE log SET flag = $1 WHERE id = 1", args: []any{-3}},
		stmt{sql: "UPDATE log SET flag = 7 WHERE id = 1"},
		stmt{sql: "UPDATE log SET lo = 5, hi = 4 WHERE id = 1"},
		stmt{sql: "UPDATE log SET lo = 0, hi = 9 WHERE id = 1"},
		stmt{sql: "UPDATE log SET note = '' WHERE id = 999"}, // no row, but the value is refused
		stmt{sql: "INSERT INTO log VALUES (60, 1, 2, 'y', 1, 2) ON CONFLICT (id) DO UPDATE SET flag = -1"},
		stmt{sql: "INSERT INTO log VALUES (1, 1, 2, 'y', 1, 2) ON CONFLICT (id) DO UPDATE SET flag = 4"},
	)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec} {
		c := p.connect(t, mode)
		mustExec(t, c, "DELETE FROM log")
		mustExec(t, plain, "DELETE FROM log")
		for _, s := range stmts {
			_, gerr := c.Exec(ctx, s.sql, s.args...)
			_, werr := plain.Exec(ctx, s.sql, s.args...)
			if pgCode(gerr) != pgCode(werr) || (gerr == nil) != (werr == nil) {
				t.Errorf("%v: %s %v: through the proxy %v, plaintext %v", mode, s.sql, s.args, gerr, werr)
				continue
			}
			if werr != nil && gerr.Error() != werr.Error() {
				t.Errorf("%v: %s %v: through the proxy %q, plaintext %q", mode, s.sql, s.args, gerr, werr)
			}
		}
		sameRows(t, c, plain, fmt.Sprintf("after the writes in %v", mode))
	}

	// COPY: a bad row fails the whole COPY, naming the line.
	c := p.connect(t, pgx.QueryExecModeSimpleProtocol)
	good := "200\t1\t2\ty\t1\t2\n201\t0\t\\N\t\\N\t\\N\t\\N\n"
	bad := good + "202\t-1\t2\ty\t1\t2\n"
	for _, in := range []string{bad, good} {
		_, gerr := c.PgConn().CopyFrom(ctx, strings.NewReader(in), "COPY log FROM STDIN")
		_, werr := plain.PgConn().CopyFrom(ctx, strings.NewReader(in), "COPY log FROM STDIN")
		if pgCode(gerr) != pgCode(werr) {
			t.Errorf("COPY: through the proxy %v, plaintext %v", gerr, werr)
		}
	}
	sameRows(t, c, plain, "after COPY")

	// An increment of a checked column is computed by the proxy
	// (read-modify-write), which checks the new values.
	for _, s := range []string{"UPDATE log SET flag = flag + 1 WHERE id < 200", "UPDATE log SET flag = flag - 5 WHERE id = 200"} {
		_, gerr := c.Exec(ctx, s, pgx.QueryExecModeSimpleProtocol)
		_, werr := plain.Exec(ctx, s)
		if pgCode(gerr) != pgCode(werr) {
			t.Errorf("%s: through the proxy %v, plaintext %v", s, gerr, werr)
		}
		sameRows(t, c, plain, s)
	}
	// What the proxy cannot evaluate is refused, not let through.
	for _, s := range []string{
		"UPDATE log SET lo = 5 WHERE id = 1", // range_ok also reads hi
	} {
		if _, err := c.Exec(ctx, s); pgCode(err) != "0A000" {
			t.Errorf("%s: %v, want 0A000", s, err)
		}
	}
	for _, s := range []string{
		"CREATE TABLE bad1 (a timestamptz CHECK (a > '2020-01-01'))", // a type the proxy cannot compute yet
		"CREATE TABLE bad2 (id serial, a int, CHECK (a > id))",       // plain and encrypted
		"CREATE TABLE bad3 (a int CHECK (a > (SELECT 1)))",
	} {
		if _, err := c.Exec(ctx, s); pgCode(err) != "0A000" {
			t.Errorf("%s: %v, want 0A000", s, err)
		}
	}
	// Django's admin log, as its first migration writes it.
	mustExec(t, c, `CREATE TABLE "django_admin_log" ("id" integer NOT NULL PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY, "action_time" timestamp with time zone NOT NULL, "object_id" text NULL, "object_repr" varchar(200) NOT NULL, "action_flag" smallint NOT NULL CHECK ("action_flag" >= 0), "change_message" text NOT NULL)`)
	mustExec(t, c, `INSERT INTO django_admin_log (action_time, object_repr, action_flag, change_message) VALUES ('2024-01-01 00:00:00+00', 'x', 1, '')`)
	if _, err := c.Exec(ctx, `INSERT INTO django_admin_log (action_time, object_repr, action_flag, change_message) VALUES ('2024-01-01 00:00:00+00', 'x', $1, '')`, -1); pgCode(err) != "23514" ||
		!strings.Contains(err.Error(), `violates check constraint "django_admin_log_action_flag_check"`) {
		t.Errorf("a negative action_flag: %v", err)
	}
}

// sameRows compares table log through the proxy and on plaintext.
func sameRows(t *testing.T, c, plain *pgx.Conn, stage string) {
	t.Helper()
	read := func(c *pgx.Conn) []string {
		rows, err := c.Query(context.Background(), "SELECT * FROM log ORDER BY id", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			v, err := r.Values()
			return fmt.Sprint(v), err
		})
		if err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		return out
	}
	if got, want := read(c), read(plain); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: through the proxy %q, plaintext %q", stage, got, want)
	}
}
