package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestQueryDMLWhere runs UPDATE and DELETE with WHERE conditions on
// encrypted columns through the proxy and directly on a plaintext copy,
// in every pgx mode, and compares the tables afterwards.
func TestQueryDMLWhere(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	direct := db.direct(t)
	const create = "CREATE TABLE %s (id int, name text, qty integer, price numeric(10,2), day date)"
	for i, mode := range allModes {
		conn := p.connect(t, mode)
		enc, plain := fmt.Sprintf("dmlw%d", i), fmt.Sprintf("dmlw%d_plain", i)
		mustExec(t, conn, fmt.Sprintf(create, enc))
		mustExec(t, direct, fmt.Sprintf(create, plain))
		for _, c := range []*pgx.Conn{conn, direct} {
			tab := enc
			if c == direct {
				tab = plain
			}
			for k := range 40 {
				mustExec(t, c, "INSERT INTO "+tab+" VALUES ($1, $2, $3, $4, $5)", k, fmt.Sprintf("n%d", k%7), k%5, fmt.Sprintf("%d.%02d", k, k), fmt.Sprintf("2024-01-%02d", k%28+1))
			}
		}
		stmts := []struct {
			sql  string
			args []any
		}{
			{"UPDATE %s SET qty = 99 WHERE name = $1", []any{"n3"}},
			{"UPDATE %s SET name = 'renamed' WHERE price > 10.5 AND price <= 20", nil},
			{"UPDATE %s SET price = NULL WHERE day BETWEEN '2024-01-03' AND $1", []any{"2024-01-05"}},
			{"DELETE FROM %s WHERE qty IN (1, 2) AND name <> 'n1'", nil},
			{"DELETE FROM %s WHERE day < '2024-01-02' OR price IS NULL", nil},
			{"UPDATE %s SET qty = 7 WHERE id = $1", []any{3}},
		}
		for _, st := range stmts {
			a, err := conn.Exec(ctx, fmt.Sprintf(st.sql, enc), st.args...)
			if err != nil {
				t.Fatalf("%v: %s: %v", mode, st.sql, err)
			}
			b := mustExec(t, direct, fmt.Sprintf(st.sql, plain), st.args...)
			if a.String() != b.String() {
				t.Errorf("%v: %s: proxy %q, direct %q", mode, st.sql, a, b)
			}
		}
		got := queryStrings(t, conn, "SELECT id, name, qty, price, day FROM "+enc+" ORDER BY id")
		want := queryStrings(t, direct, "SELECT id, name, qty, price, day FROM "+plain+" ORDER BY id")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%v: tables differ:\nproxy  %v\ndirect %v", mode, got, want)
		}
	}
}

// queryStrings returns the rows of a query with every value formatted.
func queryStrings(t *testing.T, conn *pgx.Conn, sql string, args ...any) [][]string {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = fmt.Sprint(v)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}
