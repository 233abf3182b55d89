package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestDeclaredIntegerParameters: a parameter the client declares an
// integer, compared with an encrypted column, is read as PostgreSQL
// reads it: beyond a smallint column's range it equals no value, a
// numeric or real column compares as a number, and a column of another
// kind fails with 42883.
func TestDeclaredIntegerParameters(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, "CREATE TABLE dip (id int PRIMARY KEY, si smallint, n numeric(8,2), r real, flag boolean, tx text)")
	d.both("INSERT INTO dip VALUES (1, 5, 1.5, 16777216, true, 'a'), (2, -7, 0, 0.5, false, 'b'), (3, NULL, 100, NULL, NULL, NULL)")
	c := d.p.connect(t, pgx.QueryExecModeExec)
	run := func(conn *pgx.Conn, q string, oid uint32, arg string) (string, error) {
		sd, err := conn.PgConn().Prepare(ctx, "", q, []uint32{oid})
		if err != nil {
			return "", err
		}
		res := conn.PgConn().ExecPrepared(ctx, sd.Name, [][]byte{[]byte(arg)}, nil, nil).Read()
		return fmt.Sprint(res.Rows), res.Err
	}
	for _, q := range []struct {
		sql  string
		oid  uint32
		arg  string
		code string // PostgreSQL's error, or ""
	}{
		{"SELECT id FROM dip WHERE si < $1 ORDER BY id", 23, "100000", ""},
		{"SELECT id FROM dip WHERE si = $1 ORDER BY id", 23, "100000", ""},
		{"SELECT id FROM dip WHERE si > $1 ORDER BY id", 20, "-3000000000", ""},
		{"SELECT id FROM dip WHERE n <> $1 ORDER BY id", 23, "0", ""},
		{"SELECT id FROM dip WHERE n < $1 ORDER BY id", 23, "100", ""},
		{"SELECT id FROM dip WHERE r = $1 ORDER BY id", 23, "16777217", ""},
		{"SELECT id FROM dip WHERE r = $1 ORDER BY id", 23, "16777216", ""},
		{"SELECT id FROM dip WHERE flag = $1", 23, "1", "42883"},
		{"SELECT id FROM dip WHERE tx = $1", 23, "1", "42883"},
	} {
		got, gerr := run(c, q.sql, q.oid, q.arg)
		want, werr := run(d.plain, q.sql, q.oid, q.arg)
		if pgCode(werr) != q.code {
			t.Fatalf("%s with %s: plaintext gave %v, the test expects %q", q.sql, q.arg, werr, q.code)
		}
		if pgCode(gerr) != pgCode(werr) || got != want {
			t.Errorf("%s with %s: through the proxy %v %s, plaintext %v %s", q.sql, q.arg, gerr, got, werr, want)
		}
	}
}
