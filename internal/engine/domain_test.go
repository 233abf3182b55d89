package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestDomainColumns: encrypted columns of domains (over a domain too)
// store their base type's onions and keep the domain's rules: its
// CHECKs, evaluated by the proxy with PostgreSQL's message, its NOT NULL
// and its default; answers match plaintext PostgreSQL's.
func TestDomainColumns(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE DOMAIN posint AS integer CHECK (VALUE > 0)`)
	d.both(`CREATE DOMAIN email AS varchar(100) NOT NULL CHECK (VALUE LIKE '%@%')`)
	d.both(`CREATE DOMAIN small_posint AS posint DEFAULT 7 CONSTRAINT small CHECK (VALUE < 100)`)
	d.both(`CREATE TABLE dm (id int PRIMARY KEY, a posint, e email, s small_posint, n numeric(8,2))`)
	for i, row := range []string{"1, 5, 'a@b', 50, 1.5", "2, NULL, 'x@y.z', DEFAULT, 2", "3, 2147483647, 'q@q', 99, NULL"} {
		d.both(fmt.Sprintf("INSERT INTO dm VALUES (%s)", row), pgx.QueryExecModeSimpleProtocol)
		d.both("INSERT INTO dm (id, a, e) VALUES ($1, $2, $3)", 10+i, i+1, fmt.Sprintf("u%d@h", i))
	}
	for _, bad := range []struct {
		sql, code, msg string
	}{
		{"INSERT INTO dm VALUES (20, 0, 'a@b', 1)", "23514", `value for domain posint violates check constraint "posint_check"`},
		{"INSERT INTO dm VALUES (21, 1, 'ab', 1)", "23514", `value for domain email violates check constraint "email_check"`},
		{"INSERT INTO dm VALUES (22, 1, 'a@b', 100)", "23514", `value for domain small_posint violates check constraint "small"`},
		{"INSERT INTO dm VALUES (23, 1, 'a@b', -1)", "23514", `violates check constraint`},
		{"INSERT INTO dm (id, a) VALUES (24, 1)", "23502", ""},
		{"UPDATE dm SET a = -5 WHERE id = 1", "23514", `value for domain posint violates check constraint "posint_check"`},
	} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheStatement} {
			_, gerr := d.c.Exec(ctx, bad.sql, mode)
			_, werr := d.plain.Exec(ctx, bad.sql, mode)
			if pgCode(gerr) != bad.code || pgCode(werr) != bad.code || !strings.Contains(fmt.Sprint(gerr), bad.msg) {
				t.Errorf("%v: %s: through the proxy %v, plaintext %v; want %s %q", mode, bad.sql, gerr, werr, bad.code, bad.msg)
			}
		}
	}
	d.compare([]string{
		"SELECT id, a, e, s, n FROM dm ORDER BY id",
		"SELECT id FROM dm WHERE a = 5 OR s = 7 ORDER BY id",
		"SELECT id FROM dm WHERE a > 1 ORDER BY a",
		"SELECT id FROM dm WHERE e = $1",
		"SELECT sum(a), count(s) FROM dm",
	}, nil, "u1@h")
	d.both("UPDATE dm SET s = s + 1 WHERE id = 1")
	d.compare([]string{"SELECT id, s FROM dm ORDER BY id"}, nil)
}
