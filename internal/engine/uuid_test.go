package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// TestUUIDColumns: an encrypted uuid column (Eq onion only) as a key, in
// writes with literals and text and binary parameters, and in reads:
// every query answers as on plaintext PostgreSQL, or is refused (0A000),
// never answered differently; the keys and lookups ORMs use must answer.
func TestUUIDColumns(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE TABLE u (id uuid PRIMARY KEY, ref uuid, n int)`)
	ids := []string{
		"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12}", "00000000000000000000000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff", "7d444840-9dc0-11d1-b245-5ffdce74fad2",
	}
	for i, id := range ids {
		var ref any
		if i > 0 {
			ref = ids[i-1]
		}
		// Text parameters, a binary one (pgtype.UUID), a literal.
		switch i % 3 {
		case 0:
			d.both("INSERT INTO u VALUES ($1, $2, $3)", id, ref, i)
		case 1:
			var u pgtype.UUID
			if err := u.Scan(strings.Trim(strings.ToLower(id), "{}")); err != nil {
				t.Fatal(err)
			}
			d.both("INSERT INTO u VALUES ($1, $2, $3)", u, ref, i)
		default:
			d.both(fmt.Sprintf("INSERT INTO u VALUES ('%s', '%s', %d)", id, ref, i), pgx.QueryExecModeSimpleProtocol)
		}
	}
	if _, err := d.c.Exec(ctx, "INSERT INTO u VALUES ($1, NULL, 0)", ids[0]); pgCode(err) != "23505" {
		t.Errorf("a duplicate uuid key: %v, want 23505", err)
	}
	if _, err := d.c.Exec(ctx, "INSERT INTO u VALUES ('not-a-uuid', NULL, 0)"); pgCode(err) != "22P02" {
		t.Errorf("a malformed uuid: %v, want 22P02", err)
	}
	d.compare([]string{
		"SELECT * FROM u ORDER BY n",
		"SELECT n FROM u WHERE id = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'",
		"SELECT n FROM u WHERE id = '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12}' OR ref IS NULL ORDER BY n",
		"SELECT n FROM u WHERE id IN ('ffffffff-ffff-ffff-ffff-ffffffffffff', '00000000-0000-0000-0000-000000000000') ORDER BY n",
		"SELECT n FROM u WHERE id <> 'ffffffff-ffff-ffff-ffff-ffffffffffff' ORDER BY n",
		"SELECT id FROM u ORDER BY id",
		"SELECT id, n FROM u ORDER BY id DESC LIMIT 2",
		"SELECT count(DISTINCT ref), count(*) FROM u",
		"SELECT ref, count(*) FROM u GROUP BY ref ORDER BY 2, 1",
	}, []string{
		"SELECT a.n, b.n FROM u a JOIN u b ON a.ref = b.id ORDER BY 1",
		"SELECT max(id) FROM u",
		"SELECT n FROM u WHERE id < 'b0000000-0000-0000-0000-000000000000' ORDER BY n",
		"SELECT id::text FROM u ORDER BY n",
	})
	d.both("UPDATE u SET ref = NULL WHERE id = '7d444840-9dc0-11d1-b245-5ffdce74fad2'")
	d.both("DELETE FROM u WHERE id = '00000000-0000-0000-0000-000000000000'")
	d.compare([]string{"SELECT * FROM u ORDER BY n"}, nil)
}
