package rewrite

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		kinds []string
		texts []string
	}{
		{"SELECT 1", []string{"Select"}, []string{"SELECT 1"}},
		{"select 1; insert into t values (1);  update t set a = 2 ", []string{"Select", "Insert", "Update"},
			[]string{"select 1", "insert into t values (1)", "update t set a = 2"}},
		{"BEGIN; COPY t FROM STDIN; COMMIT", []string{"Transaction", "Copy", "Transaction"}, nil},
		{"CREATE TABLE t (a int); DROP TABLE t", []string{"Create", "Drop"}, nil},
		{"SET search_path = x", []string{"VariableSet"}, nil},
		{"SELECT ';'; SELECT $$a;b$$", []string{"Select", "Select"}, []string{"SELECT ';'", "SELECT $$a;b$$"}},
		{"", nil, nil},
	} {
		stmts, err := Parse(tc.sql)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.sql, err)
		}
		if len(stmts) != len(tc.kinds) {
			t.Fatalf("Parse(%q) gave %d statements, want %d", tc.sql, len(stmts), len(tc.kinds))
		}
		for i, s := range stmts {
			if s.Kind != tc.kinds[i] {
				t.Errorf("Parse(%q)[%d].Kind = %q, want %q", tc.sql, i, s.Kind, tc.kinds[i])
			}
			if tc.texts != nil && s.SQL != tc.texts[i] {
				t.Errorf("Parse(%q)[%d].SQL = %q, want %q", tc.sql, i, s.SQL, tc.texts[i])
			}
		}
	}
}

func TestSyntaxError(t *testing.T) {
	_, err := Parse("SELECT * FROM WHERE")
	var se *SyntaxError
	if !errors.As(err, &se) || se.Position == 0 {
		t.Fatalf("got %v, want a SyntaxError with a position", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"SELECT 1", "INSERT INTO t VALUES ($1, 'x')", "SELECT ';' ; SELECT 2", "COPY t FROM STDIN"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		stmts, err := Parse(sql)
		if err != nil {
			return
		}
		// Every statement's text parses again on its own, to one statement
		// of the same kind.
		for _, s := range stmts {
			again, err := Parse(s.SQL)
			if err != nil || len(again) != 1 || again[0].Kind != s.Kind {
				t.Fatalf("statement %q of %q does not re-parse alone: %v", s.SQL, sql, err)
			}
		}
	})
}
