package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestTimeColumns: encrypted time columns (Eq and Ord onions), written
// with literals and text parameters, answer as on plaintext PostgreSQL:
// equality, ranges, ORDER BY, MIN and MAX, 24:00:00, the proxy's own
// sort and comparisons, a CHECK.
func TestTimeColumns(t *testing.T) {
	ctx := context.Background()
	d := newTypeDiff(t, `CREATE TABLE alarm (id int PRIMARY KEY, "desc" varchar(100), "time" time NOT NULL, CHECK ("time" >= '01:00' OR "time" = '00:00'))`)
	for i, lit := range []string{"'00:00'", "'04:05:06.789'", "'23:59:59.999999'", "'24:00:00'", "'12:00 AM'", "'1:30 pm'", "'allballs'", "'10:00'"} {
		d.both(fmt.Sprintf("INSERT INTO alarm VALUES (%d, 'a%d', %s)", i, i, lit), pgx.QueryExecModeSimpleProtocol)
	}
	for i, v := range []any{"05:00", "17:45:30.5", "08:30:00"} {
		d.both(`INSERT INTO alarm VALUES ($1, 'p', $2)`, 100+i, v)
	}
	if _, err := d.c.Exec(ctx, `INSERT INTO alarm VALUES (300, 'x', '00:30')`); pgCode(err) != "23514" {
		t.Errorf("a time the CHECK refuses: %v, want 23514", err)
	}
	if _, err := d.c.Exec(ctx, `INSERT INTO alarm VALUES (301, 'x', '25:00')`); pgCode(err) != "22008" {
		t.Errorf("25:00: %v, want 22008", err)
	}
	d.compare([]string{
		`SELECT id, "time" FROM alarm ORDER BY id`,
		`SELECT id FROM alarm WHERE "time" = '04:05:06.789' ORDER BY id`,
		`SELECT id FROM alarm WHERE "time" > '12:00' ORDER BY id`,
		`SELECT id FROM alarm WHERE "time" BETWEEN '01:00' AND '17:45:30.5' ORDER BY id`,
		`SELECT id, "time" FROM alarm ORDER BY "time" DESC, id`,
		`SELECT min("time"), max("time") FROM alarm`,
		`SELECT count(DISTINCT "time") FROM alarm`,
		`SELECT "time", count(*) FROM alarm GROUP BY "time" ORDER BY 1`,
		`SELECT id FROM alarm WHERE "time" < $1 ORDER BY id`,
	}, nil, "05:00:00")
}
