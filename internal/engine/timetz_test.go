package engine_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestTimeTZColumns: encrypted time with time zone columns compare and
// sort as timetz_cmp does (by instant, then zone) through the Ord onion,
// and print as timetz_out.
func TestTimeTZColumns(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE tz (id int PRIMARY KEY, t timetz, u time with time zone NOT NULL DEFAULT '00:00+00')`)
	for i, lit := range []string{"'12:00+01'", "'11:00+00'", "'11:00:00.5-03:30'", "'23:59:59.999999-12'", "'00:00z'", "NULL", "'12:00+00'", "'13:00+02'"} {
		d.both(fmt.Sprintf("INSERT INTO tz (id, t) VALUES (%d, %s)", i, lit), pgx.QueryExecModeSimpleProtocol)
	}
	d.both("INSERT INTO tz VALUES ($1, $2, $3)", 10, "04:05:06+05:30", "24:00:00-01")
	d.compare([]string{
		"SELECT id, t, u FROM tz ORDER BY id",
		"SELECT id FROM tz WHERE t = '12:00+01' ORDER BY id",
		"SELECT id FROM tz WHERE t = '11:00+00' ORDER BY id",
		"SELECT id FROM tz WHERE t < '12:00+01' ORDER BY id",
		"SELECT id, t FROM tz ORDER BY t, id",
		"SELECT min(t), max(t) FROM tz",
		"SELECT id FROM tz WHERE t >= $1 ORDER BY id",
	}, []string{
		"SELECT t, count(*) FROM tz GROUP BY t ORDER BY t",
	}, "11:00:00+00")
}
