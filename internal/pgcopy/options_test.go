package pgcopy

import (
	"strings"
	"testing"
)

// TestOptionsDifferential checks option lists as PostgreSQL does: the
// same error (SQLSTATE and message), or none; and refuses what the
// package does not support.
func TestOptionsDifferential(t *testing.T) {
	db := newDiffDB(t)
	for _, tc := range []struct {
		opts    string
		refused bool // 0A000 from ParseOptions, whatever the server says
	}{
		{"", false},
		{"(FORMAT text)", false},
		{"(FORMAT csv)", false},
		{"(FORMAT 'CSV')", false},
		{"(FORMAT xml)", false},
		{"(FORMAT csv, FORMAT text)", false},
		{"(FORMAT)", false},
		{"BINARY", true},
		{"(FORMAT binary)", true},
		{"(FORMAT binary, DELIMITER ',')", true},
		{"(FREEZE)", false},
		{"(FREEZE on)", false},
		{"(FREEZE 'OFF')", false},
		{"(FREEZE 1)", false},
		{"(FREEZE 2)", false},
		{"(FREEZE maybe)", false},
		{"(FREEZE, FREEZE false)", false},
		{"FREEZE", false},
		{"(DELIMITER ',')", false},
		{"(DELIMITER '')", false},
		{"(DELIMITER ',,')", false},
		{"(DELIMITER 'é')", false},
		{`(DELIMITER E'\n')`, false},
		{`(DELIMITER E'\r')`, false},
		{`(DELIMITER '\')`, false},
		{"(DELIMITER '.')", false},
		{"(DELIMITER 'a')", false},
		{"(DELIMITER 'A')", false},
		{"(DELIMITER '5')", false},
		{"(DELIMITER '|', DELIMITER '|')", false},
		{"(DELIMITER 1)", false},
		{"(NULL 'x', NULL 'y')", false},
		{`(NULL E'a\nb')`, false},
		{`(NULL E'a\rb')`, false},
		{"(NULL 'a|b', DELIMITER '|')", false},
		{"(NULL 'a\tb')", false},
		{`(FORMAT csv, NULL 'a"b')`, false},
		{"(FORMAT csv, QUOTE '''', NULL 'it''s')", false},
		{"(HEADER)", false},
		{"(HEADER 0)", false},
		{"(HEADER 2)", false},
		{"(HEADER match)", false},
		{"(HEADER 'MATCH')", false},
		{"(HEADER maybe)", false},
		{"(FORMAT csv, HEADER true)", false},
		{`(QUOTE '"')`, false},
		{`(ESCAPE '\')`, false},
		{"(FORMAT csv, QUOTE '')", false},
		{"(FORMAT csv, QUOTE 'ab')", false},
		{"(FORMAT csv, QUOTE ',')", false},
		{"(FORMAT csv, DELIMITER '|', QUOTE '|')", false},
		{"(FORMAT csv, ESCAPE '')", false},
		{"(FORMAT csv, ESCAPE 'ab')", false},
		{"(FORMAT csv, ESCAPE ',')", false},
		{"(FORMAT csv, QUOTE 'x', QUOTE 'y')", false},
		{`(FORMAT csv, DELIMITER '\')`, false},
		{"(FORMAT csv, DELIMITER 'a')", false},
		{"(FORCE_NOT_NULL (a))", false},
		{"(FORCE_NULL (a))", false},
		{"(FORMAT csv, FORCE_NOT_NULL (a, c))", false},
		{"(FORMAT csv, FORCE_NULL (b))", false},
		{"(FORMAT csv, FORCE_NOT_NULL a)", false},
		{"(FORMAT csv, FORCE_NOT_NULL (a), FORCE_NOT_NULL (b))", false},
		{"(FORMAT csv, FORCE_QUOTE (a))", false},
		{"(FORCE_QUOTE (a))", false},
		{"CSV FORCE NOT NULL a, b", false},
		{"CSV FORCE NULL c", false},
		{"(FORMAT csv, FORCE_NULL (n))", false},
		{"(ENCODING 'UTF8')", false},
		{"(ENCODING 'utf-8')", false},
		{"(ENCODING 'Unicode')", false},
		{"(ENCODING 'LATIN1')", true},
		{"(ENCODING 'SJIS')", true},
		{"(ENCODING 'UTF8', ENCODING 'UTF8')", false},
		{"(WHATEVER 1)", false},
		{"(DEFAULT 'x')", true},
		{"(ON_ERROR ignore)", true},
		{"(LOG_VERBOSITY verbose)", true},
		{`WITH CSV HEADER DELIMITER ';' NULL '' QUOTE '"' ESCAPE '\' FORCE NOT NULL a`, false},
		{"DELIMITER AS ',' NULL AS 'x' CSV QUOTE AS '''' ENCODING 'utf8'", false},
	} {
		o, err := parseOpts(tc.opts)
		got := ""
		if err != nil {
			got = errString(err)
		} else {
			got = readAll(o, diffColumns, nil).err
		}
		if tc.refused {
			if !strings.HasPrefix(got, "0A000: ") {
				t.Errorf("%s: got %q, want a 0A000 refusal", tc.opts, got)
			}
			continue
		}
		want := db.copyIn("direct", 3, tc.opts, nil).err
		if strings.HasPrefix(want, "55000: cannot perform COPY FREEZE") && o.Freeze {
			want = "" // the server's own condition, checked by the server
		}
		if got != want {
			t.Errorf("%s:\n     got %q\npostgres %q", tc.opts, got, want)
		}
	}
}
