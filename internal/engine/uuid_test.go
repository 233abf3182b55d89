package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgonion/pgonion/internal/pgtest"
)

// TestUUIDColumns: an encrypted uuid column (Eq onion only) as a key, in
// writes with literals and text and binary parameters, and in reads:
// every query answers as on plaintext PostgreSQL, or is refused (0A000),
// never answered differently; the keys and lookups ORMs use must answer.
func TestUUIDColumns(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	plain, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(ctx)
	const ddl = `CREATE TABLE u (id uuid PRIMARY KEY, ref uuid, n int)`
	c := p.connect(t, pgx.QueryExecModeCacheStatement)
	mustExec(t, c, ddl)
	mustExec(t, plain, ddl)
	ids := []string{
		"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12}", "00000000000000000000000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff", "7d444840-9dc0-11d1-b245-5ffdce74fad2",
	}
	for i, id := range ids {
		var ref any
		if i > 0 {
			ref = ids[i-1]
		}
		for _, conn := range []*pgx.Conn{c, plain} {
			// Text parameters, then a binary one (pgtype.UUID is sent in
			// binary), then a literal.
			switch i % 3 {
			case 0:
				mustExec(t, conn, "INSERT INTO u VALUES ($1, $2, $3)", id, ref, i)
			case 1:
				var u pgtype.UUID
				if err := u.Scan(strings.Trim(strings.ToLower(id), "{}")); err != nil {
					t.Fatal(err)
				}
				mustExec(t, conn, "INSERT INTO u VALUES ($1, $2, $3)", u, ref, i)
			default:
				mustExec(t, conn, fmt.Sprintf("INSERT INTO u VALUES ('%s', '%s', %d)", id, ref, i), pgx.QueryExecModeSimpleProtocol)
			}
		}
	}
	if _, err := c.Exec(ctx, "INSERT INTO u VALUES ($1, NULL, 0)", ids[0]); pgCode(err) != "23505" {
		t.Errorf("a duplicate uuid key: %v, want 23505", err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO u VALUES ('not-a-uuid', NULL, 0)"); pgCode(err) != "22P02" {
		t.Errorf("a malformed uuid: %v, want 22P02", err)
	}
	must := []string{
		"SELECT * FROM u ORDER BY n",
		"SELECT n FROM u WHERE id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
		"SELECT n FROM u WHERE id = '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12}' OR ref IS NULL ORDER BY n",
		"SELECT n FROM u WHERE id IN ('ffffffff-ffff-ffff-ffff-ffffffffffff', '00000000-0000-0000-0000-000000000000') ORDER BY n",
		"SELECT n FROM u WHERE id <> 'ffffffff-ffff-ffff-ffff-ffffffffffff' ORDER BY n",
		"SELECT id FROM u ORDER BY id",
		"SELECT id, n FROM u ORDER BY id DESC LIMIT 2",
		"SELECT count(DISTINCT ref), count(*) FROM u",
		"SELECT ref, count(*) FROM u GROUP BY ref ORDER BY 2, 1",
		"UPDATE u SET ref = NULL WHERE id = '7d444840-9dc0-11d1-b245-5ffdce74fad2' RETURNING id",
		"DELETE FROM u WHERE id = '00000000-0000-0000-0000-000000000000' RETURNING id, ref",
		"SELECT * FROM u ORDER BY n",
	}
	maybe := []string{
		"SELECT a.n, b.n FROM u a JOIN u b ON a.ref = b.id ORDER BY 1",
		"SELECT max(id) FROM u",
		"SELECT n FROM u WHERE id < 'b0000000-0000-0000-0000-000000000000' ORDER BY n",
		"SELECT id::text FROM u ORDER BY n",
	}
	run := func(conn *pgx.Conn, q string) (string, error) {
		rows, err := conn.Query(ctx, q)
		if err != nil {
			return "", err
		}
		out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
			v, err := r.Values()
			return fmt.Sprint(v), err
		})
		return strings.Join(out, "\n"), err
	}
	for i, q := range append(must, maybe...) {
		got, gerr := run(c, q)
		want, werr := run(plain, q)
		switch {
		case werr != nil:
			if pgCode(gerr) != pgCode(werr) {
				t.Errorf("%s: through the proxy %v, plaintext %v", q, gerr, werr)
			}
		case gerr != nil && i >= len(must) && pgCode(gerr) == "0A000":
			t.Logf("refused: %s: %v", q, gerr)
		case gerr != nil:
			t.Errorf("%s: %v", q, gerr)
		case got != want:
			t.Errorf("%s: through the proxy\n%s\nplaintext\n%s", q, got, want)
		}
	}
}
