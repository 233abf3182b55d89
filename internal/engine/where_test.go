package engine_test

import (
	"testing"
)

// TestWhereExpressions: WHERE conditions over expressions of encrypted
// columns the server cannot evaluate are computed by the proxy, in both
// protocols: a LIKE whose pattern is computed (Django's icontains writes
// UPPER(col::text) LIKE UPPER(%s)), extract, casts, arithmetic.
func TestWhereExpressions(t *testing.T) {
	d := newTypeDiff(t, `CREATE TABLE wx (id int PRIMARY KEY, name text, d date, n int)`)
	d.both(`INSERT INTO wx VALUES (1, 'abc', '2020-01-02', 5), (2, 'xAbz', '2021-03-04', 7), (3, NULL, NULL, NULL)`)
	d.compare([]string{
		"SELECT id, name FROM wx WHERE UPPER(name::text) LIKE UPPER('%ab%') ORDER BY id",
		"SELECT id FROM wx WHERE EXTRACT(YEAR FROM d) = 2020 ORDER BY id",
		"SELECT id, name FROM wx WHERE name::text LIKE 'a%' ORDER BY id",
		"SELECT wx.id, wx.name FROM wx WHERE (wx.n + 1) > 6 ORDER BY wx.id",
		"SELECT id FROM wx WHERE name LIKE $1 ORDER BY id",
		"SELECT id FROM wx WHERE UPPER(name) = 'ABC'",
		"SELECT id FROM wx WHERE UPPER(name::text) LIKE UPPER($1) ORDER BY id",
	}, nil, "%b%")
}
