package rewrite

import "testing"

func TestNamesProxySchema(t *testing.T) {
	for _, tt := range []struct {
		sql  string
		want bool
	}{
		{"DELETE FROM pgonion.tables WHERE table_name = 'people'", true},
		{"UPDATE pgonion.catalog_version SET version = version + 1", true},
		{"SELECT * FROM pgonion.policies", true},
		{"INSERT INTO pgonion.policies SELECT * FROM old_policies", true},
		{"SELECT pgonion.paillier_sum(x) FROM t", true},
		{"DROP SCHEMA pgonion CASCADE", true},
		{"ALTER TABLE pgonion.columns DISABLE TRIGGER ALL", true},
		{"TRUNCATE pgonion.tables", true},
		{"SET search_path = pgonion, public", true},
		{"SELECT pgonion.tables.version FROM pgonion.tables", true},
		{"GRANT ALL ON SCHEMA pgonion TO PUBLIC", true},
		{"CREATE SCHEMA pgonion", true},
		{"SELECT 'pgonion.tables'", false},
		{"SELECT * FROM tables", false},
		{"SELECT pgonion FROM t", false},
		{"SET search_path = public", false},
	} {
		stmts, err := Parse(tt.sql)
		if err != nil {
			t.Fatal(err)
		}
		if got := NamesProxySchema(stmts[0]); got != tt.want {
			t.Errorf("NamesProxySchema(%q) = %v, want %v", tt.sql, got, tt.want)
		}
	}
}
