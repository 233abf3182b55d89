package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestArrayColumns: encrypted one-dimensional arrays (an Eq onion over
// their elements' equality, an exact copy) written as literals and as
// binary and text parameters read back and compare as on plaintext
// PostgreSQL; what the proxy cannot evaluate is refused.
func TestArrayColumns(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE arr (id int PRIMARY KEY, tags text[], nums int[] NOT NULL DEFAULT '{}', amounts numeric(8,2)[], v varchar(3)[])`)
	for i, row := range []string{
		`'{a,b}', '{1,2,3}', '{1.5,2}', '{abc}'`,
		`'{"a b","",NULL}', '{}', '{1.005}', '{}'`,
		`NULL, '{NULL,7}', NULL, '{x,y}'`,
		`'{a,b}', '{3,2,1}', '{1.50,2.00}', NULL`,
		`'{"{}",","}', DEFAULT, '{}', '{"  "}'`,
	} {
		d.both(fmt.Sprintf("INSERT INTO arr VALUES (%d, %s)", i, row), pgx.QueryExecModeSimpleProtocol)
	}
	d.both("INSERT INTO arr VALUES ($1, $2, $3, $4, $5)", 10, []string{"p", "q r"}, []int32{4, 5}, []string{"1.25"}, []string{"ab"})
	d.both("INSERT INTO arr VALUES ($1, $2, $3, $4, $5)", 11, "{x,NULL}", "{9}", "{7}", "{c}")
	if _, err := d.c.Exec(context.Background(), "INSERT INTO arr VALUES (20, '{a}', '{1}', '{1}', '{abcd}')"); pgCode(err) != "22001" {
		t.Errorf("a too long element: %v, want 22001", err)
	}
	if _, err := d.c.Exec(context.Background(), "INSERT INTO arr VALUES (21, '{a}', '{x}')"); pgCode(err) != "22P02" {
		t.Errorf("a bad element: %v, want 22P02", err)
	}
	d.compare([]string{
		"SELECT id, tags, nums, amounts, v FROM arr ORDER BY id",

		"SELECT id FROM arr WHERE tags = '{a,b}' ORDER BY id",
		"SELECT id FROM arr WHERE amounts = '{1.5,2}' ORDER BY id",
		"SELECT id FROM arr WHERE nums <> '{}' ORDER BY id",
		"SELECT id FROM arr WHERE tags IS NULL ORDER BY id",
		"SELECT count(DISTINCT tags), count(*) FROM arr",
		"SELECT id FROM arr WHERE nums = $1 ORDER BY id",
	}, []string{
		"SELECT id, tags::text, nums::text FROM arr ORDER BY id",
		"SELECT id FROM arr WHERE 2 = ANY(nums) ORDER BY id",
		"SELECT id FROM arr ORDER BY nums, id",
		"SELECT tags, count(*) FROM arr GROUP BY tags ORDER BY tags",
	}, []int32{1, 2, 3})
	d.both("UPDATE arr SET tags = $1 WHERE id = $2", []string{"z"}, 1)
	d.compare([]string{"SELECT id, tags FROM arr ORDER BY id"}, nil)
}
