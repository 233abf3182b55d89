package engine_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// rekeyPolicy encrypts every column (no Paillier, to keep inserts fast);
// customers.secret is sensitive.
func rekeyPolicy(table, column string) rewrite.ColumnPolicy {
	if column == "secret" {
		return rewrite.ColumnPolicy{Policy: catalog.Sensitive}
	}
	return rewrite.ColumnPolicy{Policy: catalog.Encrypted, Capabilities: []string{"eq", "ord"}}
}

// TestJoinOnDemand: a join of two columns under different keys is not
// refused: the proxy re-keys both into a new join group (JOIN-ADJ) and
// runs it on the server; a third column compared with one of them later
// joins that group; a sensitive column is never re-keyed; inside a
// transaction block the statement is refused with a hint; a second proxy
// sees the groups. Every answer matches plaintext.
func TestJoinOnDemand(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, rekeyPolicy)
	conn := p.connect(t, pgx.QueryExecModeCacheStatement)
	direct := db.direct(t)
	ddl := []string{
		"CREATE TABLE %scustomers (id int, name text, secret int)",
		"CREATE TABLE %sorders (id int, customer int, total int)",
	}
	for _, d := range ddl {
		mustExec(t, conn, fmt.Sprintf(d, ""))
		mustExec(t, direct, fmt.Sprintf(d, "plain_"))
	}
	for _, pre := range []string{"", "plain_"} {
		c := conn
		if pre != "" {
			c = direct
		}
		for i := 1; i <= 60; i++ {
			mustExec(t, c, fmt.Sprintf("INSERT INTO %scustomers VALUES ($1, $2, $3)", pre), i, fmt.Sprint("customer ", i%20), i*7)
		}
		for i := 1; i <= 300; i++ {
			mustExec(t, c, fmt.Sprintf("INSERT INTO %sorders VALUES ($1, $2, $3)", pre), i, 1+(i*13)%70, (i*37)%500)
		}
	}
	groups := func() map[string]string {
		t.Helper()
		rows, err := direct.Query(ctx, `SELECT t.table_name || '.' || c.column_name, coalesce(c.join_group, '') FROM pgonion.columns c JOIN pgonion.tables t USING (table_id)`)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			out[k] = v
		}
		return out
	}
	same := func(c *pgx.Conn, q string) {
		t.Helper()
		got, want := queryStrings(t, c, fmt.Sprintf(q, "", "")), queryStrings(t, direct, fmt.Sprintf(q, "plain_", "plain_"))
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s\nthrough the proxy: %v\nplaintext: %v", q, got, want)
		}
	}

	same(conn, "SELECT c.name, count(*), sum(o.total) FROM %scustomers c JOIN %sorders o ON o.customer = c.id GROUP BY c.name ORDER BY 1")
	g := groups()
	if g["orders.customer"] == "" || g["orders.customer"] != g["customers.id"] || !strings.HasPrefix(g["orders.customer"], "adj_") {
		t.Fatalf("after the join: groups %v, want orders.customer and customers.id in one new group", g)
	}
	if n := p.eng.Rekeys(); n != 2 {
		t.Fatalf("%d columns re-keyed, want 2", n)
	}
	// An order comparison with a third column: it joins the group.
	same(conn, "SELECT count(*) FROM %sorders o JOIN %scustomers c ON o.total < c.id WHERE c.id < 10")
	if g := groups(); g["orders.total"] != g["customers.id"] {
		t.Fatalf("after the range join: groups %v, want orders.total in customers.id's group", g)
	}
	// The join again: nothing more to re-key.
	same(conn, "SELECT o.id, c.name FROM %sorders o, %scustomers c WHERE o.customer = c.id AND o.id < 40 ORDER BY 1")
	if n := p.eng.Rekeys(); n != 3 {
		t.Fatalf("%d columns re-keyed, want 3", n)
	}
	// Never a sensitive column.
	if _, err := conn.Exec(ctx, "SELECT c.id FROM customers c JOIN orders o ON o.total = c.secret"); pgCode(err) != "0A000" {
		t.Fatalf("a join on a sensitive column: %v, want 0A000", err)
	}
	// In a transaction block: refused, with the way out in the hint.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(ctx, "SELECT count(*) FROM orders o JOIN customers c ON o.id = c.id")
	_ = tx.Rollback(ctx)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "0A000" || !strings.Contains(pe.Hint, "transaction block") || !strings.Contains(pe.Hint, "--join-group") {
		t.Fatalf("a join needing a re-key in a transaction block: %v, want 0A000 with a hint", err)
	}
	// Another proxy plans with the groups.
	p2 := startProxy(t, db, rekeyPolicy)
	same(p2.connect(t, pgx.QueryExecModeSimpleProtocol), "SELECT c.name, count(*) FROM %scustomers c JOIN %sorders o ON o.customer = c.id GROUP BY c.name ORDER BY 1")
	if n := p2.eng.Rekeys(); n != 0 {
		t.Fatalf("the second proxy re-keyed %d columns", n)
	}
}
