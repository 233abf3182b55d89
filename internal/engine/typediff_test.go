package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// typeDiff is the harness of the column type tests: one table created
// through a proxy (default policy) and directly on a plaintext database,
// written alike, queried through the proxy and directly.
type typeDiff struct {
	t     *testing.T
	p     *proxy
	c     *pgx.Conn // through the proxy (extended protocol, cached statements)
	plain *pgx.Conn
}

// newTypeDiff runs ddl through a new proxy and on a plaintext database.
func newTypeDiff(t *testing.T, ddl string) *typeDiff {
	t.Helper()
	return newTypeDiffWith(t, "", ddl)
}

// newTypeDiffWith is newTypeDiff on databases created with options
// (pgtest.DSNWith).
func newTypeDiffWith(t *testing.T, options, ddl string) *typeDiff {
	t.Helper()
	p := startProxy(t, newEncDBAt(t, pgtest.DSNWith(t, options)), nil)
	plain, err := pgx.Connect(context.Background(), pgtest.DSNWith(t, options))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close(context.Background()) })
	d := &typeDiff{t: t, p: p, c: p.connect(t, pgx.QueryExecModeCacheStatement), plain: plain}
	d.both(ddl)
	return d
}

// both runs sql through the proxy and directly (args as pgx takes them:
// a QueryExecMode first picks the protocol).
func (d *typeDiff) both(sql string, args ...any) {
	d.t.Helper()
	mustExec(d.t, d.c, sql, args...)
	mustExec(d.t, d.plain, sql, args...)
}

// rowsText runs q and returns its rows as text, one line each.
func rowsText(conn *pgx.Conn, q string, args ...any) (string, error) {
	rows, err := conn.Query(context.Background(), q, args...)
	if err != nil {
		return "", err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		v, err := r.Values()
		return fmt.Sprint(v), err
	})
	return strings.Join(out, "\n"), err
}

// compare runs each query through the proxy (in the extended and simple
// protocols) and directly, with args, and fails on any difference. A
// query of maybe may instead be refused (0A000): it is logged. A query
// an error answers directly must get the same SQLSTATE.
func (d *typeDiff) compare(queries, maybe []string, args ...any) {
	d.t.Helper()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		c := d.p.connect(d.t, mode)
		for i, q := range append(append([]string{}, queries...), maybe...) {
			var a []any
			if strings.Contains(q, "$1") {
				a = args
			}
			got, gerr := rowsText(c, q, a...)
			want, werr := rowsText(d.plain, q, a...)
			switch {
			case werr != nil:
				if pgCode(gerr) != pgCode(werr) {
					d.t.Errorf("%v: %s: through the proxy %v, plaintext %v", mode, q, gerr, werr)
				}
			case gerr != nil && i >= len(queries) && pgCode(gerr) == "0A000":
				d.t.Logf("refused: %s: %v", q, gerr)
			case gerr != nil || got != want:
				d.t.Errorf("%v: %s: through the proxy %v\n%s\nplaintext\n%s", mode, q, gerr, got, want)
			}
		}
	}
}
