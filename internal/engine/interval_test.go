package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestIntervalColumns: encrypted interval columns (Eq onion, exact copy)
// written with literals, psycopg's text form and binary parameters answer
// as on plaintext PostgreSQL: equality by span ('1 day' = '24:00:00'),
// the proxy's sort, output exactly as written.
func TestIntervalColumns(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE durations (id int PRIMARY KEY, d interval NOT NULL)`)
	for i, lit := range []string{"1 day", "24:00:00", "1 day 0:00:03.000005", "-1 day 0:00:01", "1 mon", "30 days", "1.5 weeks", "00:00:00", "2 years 3 mons 4 days 05:06:07"} {
		d.both(fmt.Sprintf("INSERT INTO durations VALUES (%d, '%s')", i, lit), pgx.QueryExecModeSimpleProtocol)
	}
	for i, v := range []time.Duration{90 * time.Minute, -time.Second, 36 * time.Hour} {
		d.both("INSERT INTO durations VALUES ($1, $2)", 100+i, v) // a binary interval
	}
	d.compare([]string{
		"SELECT id, d FROM durations ORDER BY id",
		"SELECT id FROM durations WHERE d = '1 day' ORDER BY id",
		"SELECT id FROM durations WHERE d = '720:00:00' ORDER BY id",
		"SELECT id FROM durations WHERE d IN ('36 hours', '00:00:00') ORDER BY id",
		"SELECT id, d FROM durations ORDER BY d, id",
	}, []string{
		"SELECT count(DISTINCT d) FROM durations", // equal spans print differently
	})
}
