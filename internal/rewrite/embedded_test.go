package rewrite

import "testing"

func TestEmbeddedSQL(t *testing.T) {
	for _, tt := range []struct {
		sql       string
		construct string
		text      string // "" when not a constant
		language  string
	}{
		{"DO $$ BEGIN PERFORM 1 FROM emp WHERE name = 'x'; END $$", "DO block", " BEGIN PERFORM 1 FROM emp WHERE name = 'x'; END ", "plpgsql"},
		{"DO LANGUAGE plpython3u $$ plpy.execute('select 1') $$", "DO block", " plpy.execute('select 1') ", "plpython3u"},
		{"CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT count(*) FROM emp'", "CREATE FUNCTION body", "SELECT count(*) FROM emp", "sql"},
		{"CREATE PROCEDURE p() LANGUAGE plpgsql AS $$ BEGIN DELETE FROM emp; END $$", "CREATE PROCEDURE body", " BEGIN DELETE FROM emp; END ", "plpgsql"},
		{"SELECT query_to_xml('SELECT * FROM emp WHERE name = ''x''', true, false, '')", "query_to_xml argument", "SELECT * FROM emp WHERE name = 'x'", "sql"},
		{"SELECT query_to_xml(q::text, true, false, '') FROM qs", "query_to_xml argument", "", "sql"},
		{"SELECT * FROM dblink('dbname=x', 'SELECT name FROM emp') AS t(name text)", "dblink argument", "SELECT name FROM emp", "sql"},
	} {
		stmts, err := Parse(tt.sql)
		if err != nil {
			t.Fatal(err)
		}
		got := EmbeddedSQL(stmts[0])
		if len(got) != 1 || got[0].Construct != tt.construct || got[0].Text != tt.text || got[0].Language != tt.language {
			t.Errorf("EmbeddedSQL(%q) = %+v", tt.sql, got)
		}
	}
	for _, sql := range []string{"SELECT 1", "CREATE FUNCTION f() RETURNS int LANGUAGE sql RETURN 1", "SELECT table_to_xml('emp', true, false, '')"} {
		stmts, err := Parse(sql)
		if err != nil {
			t.Fatal(err)
		}
		if got := EmbeddedSQL(stmts[0]); len(got) != 0 {
			t.Errorf("EmbeddedSQL(%q) = %+v, want none", sql, got)
		}
	}
}

func TestMentionsWord(t *testing.T) {
	for _, tt := range []struct {
		text, word string
		want       bool
	}{
		{"SELECT * FROM emp", "emp", true},
		{"select * from EMP;", "emp", true},
		{`select * from "Emp"`, "emp", true},
		{"select * from employees", "emp", false},
		{"select * from my_emp", "emp", false},
		{"emp", "emp", true},
		{"x.emp.y", "emp", true},
		{"'emp'", "emp", true},
	} {
		if got := MentionsWord(tt.text, tt.word); got != tt.want {
			t.Errorf("MentionsWord(%q, %q) = %v", tt.text, tt.word, got)
		}
	}
}

func TestConstantRelation(t *testing.T) {
	for _, tt := range []struct {
		sql  string
		want bool
	}{
		{"WITH c AS (SELECT 'alice' AS v) SELECT id FROM emp2, c WHERE name = c.v", true},
		{"SELECT id FROM emp2, LATERAL (SELECT 'alice' AS v) c WHERE name = c.v", true},
		{"SELECT id FROM emp2 WHERE name IN (SELECT 'alice')", true},
		{"SELECT id FROM emp2, (VALUES ('alice'), ('bob')) v(x) WHERE name = v.x", true},
		{"UPDATE emp2 SET x = 1 FROM (VALUES ('alice')) v(n) WHERE emp2.name = v.n", true},
		{"SELECT id FROM emp2 WHERE name = (SELECT 'x'::text)", true},
		{"SELECT id FROM emp2 WHERE name = 'alice'", false},
		{"SELECT 'alice'", false},
		{"SELECT id FROM emp2 WHERE EXISTS (SELECT 1 FROM t WHERE t.x = emp2.id)", false},
		{"SELECT id FROM (SELECT id, 5 AS five FROM emp2) s", false},
		{"SELECT id FROM emp2, (SELECT NULL AS v) c", false},
		{"INSERT INTO emp2 VALUES (1, 'alice')", false},
	} {
		stmts, err := Parse(tt.sql)
		if err != nil {
			t.Fatal(err)
		}
		if got := ConstantRelation(stmts[0]); got != tt.want {
			t.Errorf("ConstantRelation(%q) = %v, want %v", tt.sql, got, tt.want)
		}
	}
}
