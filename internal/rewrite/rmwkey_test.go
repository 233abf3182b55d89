package rewrite

import (
	"testing"

	"github.com/pgonion/pgonion/internal/catalog"
)

func TestKeyedByPrimaryKey(t *testing.T) {
	for _, tc := range []struct {
		key   []string
		where string
		want  bool
	}{
		{[]string{"id"}, "id = $1", true},
		{[]string{"id"}, "$1 = id", true},
		{[]string{"id"}, "t.id = 5 AND n > 0", true},
		{[]string{"id"}, "id = $1::int8", true},
		{[]string{"id"}, "x.id = $1", false}, // not the target's qualifier
		{[]string{"id"}, "id = $1 OR id = $2", false},
		{[]string{"id"}, "id IN ($1, $2)", false},
		{[]string{"id"}, "id >= $1", false},
		{[]string{"id"}, "id = n", false},
		{[]string{"id"}, "n = $1", false},
		{[]string{"a", "b"}, "a = $1 AND b = $2", true},
		{[]string{"a", "b"}, "(a = $1 AND n = 3) AND b = 'x'", true},
		{[]string{"a", "b"}, "a = $1", false},
		{[]string{}, "id = $1", false}, // no primary key
		{nil, "id = $1", false},        // unknown
		{[]string{"id"}, "", false},    // no WHERE
	} {
		sql := "UPDATE t SET n = n + 1"
		if tc.where != "" {
			sql += " WHERE " + tc.where
		}
		sts, err := Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		where := sts[0].Tree.Stmt.GetUpdateStmt().WhereClause
		if got := keyedByPrimaryKey(where, &catalog.Table{Name: "t", PrimaryKey: tc.key}, "t"); got != tc.want {
			t.Errorf("key %v, WHERE %s: %v, want %v", tc.key, tc.where, got, tc.want)
		}
	}
}
