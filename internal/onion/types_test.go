package onion

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// typeName parses "CREATE TABLE t (c <sql>)" with pg_query and returns the
// column's TypeName names and integer typmods.
func typeName(t *testing.T, sql string) ([]string, []int32, bool) {
	t.Helper()
	r, err := pg_query.Parse("CREATE TABLE t (c " + sql + ")")
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	tn := r.Stmts[0].Stmt.GetCreateStmt().TableElts[0].GetColumnDef().TypeName
	var names []string
	for _, n := range tn.Names {
		names = append(names, n.GetString_().Sval)
	}
	var mods []int32
	for _, m := range tn.Typmods {
		mods = append(mods, m.GetAConst().GetIval().Ival)
	}
	return names, mods, len(tn.ArrayBounds) > 0
}

// TestTypeFromNamesCatalog checks OID, Typmod, Size and String against
// PostgreSQL's catalog for columns declared with each spelling.
func TestTypeFromNamesCatalog(t *testing.T) {
	conn := connect(t)
	for i, sql := range []string{
		"smallint", "int2", "integer", "int", "int4", "bigint", "int8", "numeric", "decimal", "numeric(10,2)",
		"numeric(10)", "decimal(5,-2)", "numeric(3,5)", "numeric(1000,0)", "text", "varchar", "character varying",
		"varchar(20)", "character varying(1)", "char", "character", "char(3)", "character(10)", "bpchar", "pg_catalog.bpchar",
		"date", "timestamp", "timestamp without time zone", "timestamptz", "timestamp with time zone",
		"bool", "boolean", "bytea", "cidr", "inet", "json", "jsonb", "timetz", "time with time zone", "int[]", "numeric(10,2)[]", "real", "float4", "float(10)", "float(24)", "float(25)", "float", "double precision", "pg_catalog.int4", "pg_catalog.text", "varchar(10485760)",
	} {
		names, mods, array := typeName(t, sql)
		typ, err := TypeFromNames(names, mods)
		if err == nil && array {
			typ, err = ArrayOf(typ)
		}
		if err != nil {
			t.Errorf("%s (%v %v): %v", sql, names, mods, err)
			continue
		}
		tbl := fmt.Sprintf("ty%d", i)
		exec(t, conn, fmt.Sprintf("CREATE TEMP TABLE %s (c %s)", tbl, sql))
		res := conn.ExecParams(context.Background(), `SELECT a.atttypid::int8, a.atttypmod, t.typlen, format_type(a.atttypid, a.atttypmod)
			FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid WHERE a.attrelid = $1::regclass AND a.attname = 'c'`,
			[][]byte{[]byte(tbl)}, nil, nil, nil).Read()
		if res.Err != nil || len(res.Rows) != 1 {
			t.Fatalf("%s: %v", sql, res.Err)
		}
		got := fmt.Sprintf("%d %d %d %s", typ.OID(), typ.Typmod(), typ.Size(), typ)
		r := res.Rows[0]
		want := fmt.Sprintf("%s %s %s %s", r[0], r[1], r[2], r[3])
		if got != want {
			t.Errorf("%s: onion %q, PostgreSQL %q", sql, got, want)
		}
		if err := typ.Check(); err != nil {
			t.Errorf("%s: Check: %v", sql, err)
		}
	}
}

func TestTypeFromNamesErrors(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want string
	}{
		{`"char"`, `"char"`},
		{"serial", "serial"},
		{"bigserial", "bigserial"},
		{"smallserial", "smallserial"},
		{"time(3)", "time(p)"},
		{"timetz(3)", "time(p)"},
		{"interval hour", "interval"},
		{"timestamp(3)", "timestamp(p)"},
		{"timestamptz(0)", "timestamp(p)"},
		{"numeric(1001)", "precision"},
		{"numeric(10,1001)", "scale"},
		{"varchar(10485761)", "cannot exceed"},
		{"myschema.mytype", "myschema.mytype"},
		{"_int4", "array"},
	} {
		names, mods, _ := typeName(t, tc.sql)
		_, err := TypeFromNames(names, mods)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.sql, err, tc.want)
		}
	}
	if _, _, array := typeName(t, "int[]"); !array {
		t.Error("int[] is not reported as an array")
	}
	for _, tc := range []struct {
		names []string
		mods  []int32
		want  Type
	}{
		{[]string{"integer"}, nil, Type{Base: Integer}},
		{[]string{"character varying"}, []int32{3}, Type{Base: Varchar, Length: 3}},
		{[]string{"character"}, nil, Type{Base: Char, Length: 1}},
		{[]string{"bpchar"}, nil, Type{Base: Char}},
		{[]string{"pg_catalog", "bpchar"}, []int32{1}, Type{Base: Char, Length: 1}},
		{[]string{"boolean"}, nil, Type{Base: Boolean}},
		{[]string{"timestamp with time zone"}, nil, Type{Base: Timestamptz}},
	} {
		if got, err := TypeFromNames(tc.names, tc.mods); err != nil || got != tc.want {
			t.Errorf("%v %v: %v, %v", tc.names, tc.mods, got, err)
		}
	}
}

func TestCapabilities(t *testing.T) {
	for _, tc := range []struct {
		t    Type
		want []Capability
	}{
		{Type{Base: Integer}, []Capability{Eq, Ord, Add}},
		{Type{Base: Numeric, Precision: 18, Scale: 2}, []Capability{Eq, Ord, Add}},
		{Type{Base: Numeric, Precision: 19, Scale: 2}, []Capability{Eq, Add}},
		{Type{Base: Numeric, Precision: 301}, []Capability{Eq}},
		{Type{Base: Numeric}, []Capability{Eq}},
		{Type{Base: Text}, []Capability{Eq, Ord, Search}},
		{Type{Base: Char, Length: 3}, []Capability{Eq, Ord, Search}},
		{Type{Base: Timestamptz}, []Capability{Eq, Ord}},
		{Type{Base: Bytea}, []Capability{Eq}},
	} {
		if got := tc.t.Capabilities(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.t, got, tc.want)
		}
	}
}

func TestEnv(t *testing.T) {
	for _, tc := range []struct {
		style string
		ok    bool
	}{
		{"", true}, {"ISO, MDY", true}, {"iso,dmy", true}, {"ISO, YMD", true}, {"ISO", true},
		{"SQL, DMY", false}, {"Postgres, MDY", false}, {"German", false}, {"nonsense", false},
	} {
		if err := (Env{DateStyle: tc.style}).Check(); (err == nil) != tc.ok {
			t.Errorf("DateStyle %q: %v", tc.style, err)
		}
	}
	// The field order of DateStyle applies to input.
	d := Type{Base: Date}
	for _, tc := range []struct{ style, in, want string }{
		{"ISO, MDY", "01/02/2024", "2024-01-02"},
		{"ISO, DMY", "01/02/2024", "2024-02-01"},
		{"ISO, YMD", "24/02/01", "2024-02-01"},
		{"ISO, DMY", "2024-02-01", "2024-02-01"},
	} {
		env := Env{DateStyle: tc.style}
		v, err := d.ParseText([]byte(tc.in), env)
		if err != nil || string(d.AppendText(nil, v, env)) != tc.want {
			t.Errorf("%s %q: %s, %v", tc.style, tc.in, d.AppendText(nil, v, env), err)
		}
	}
	if _, err := d.ParseText([]byte("2024-01-01"), Env{DateStyle: "SQL, DMY"}); err == nil {
		t.Error("non-ISO DateStyle accepted")
	}
	for _, tc := range []struct {
		tz string
		ok bool
	}{
		{"UTC", true}, {"Europe/Berlin", true}, {"Etc/GMT+3", true}, {"America/Argentina/Buenos_Aires", true},
		{"UTC+3", false}, {"+05:30", false}, {"<+03>-03", false}, {"No/Such_Zone", false},
	} {
		e, err := NewEnv("ISO, MDY", tc.tz)
		if (err == nil) != tc.ok {
			t.Errorf("TimeZone %q: %v", tc.tz, err)
		}
		if err == nil && e.TimeZone == nil {
			t.Errorf("TimeZone %q: nil location", tc.tz)
		}
	}
}

// TestDifferentialDateStyle runs date inputs under the other field orders.
func TestDifferentialDateStyle(t *testing.T) {
	conn := connect(t)
	exec(t, conn, "CREATE TEMP TABLE ds (v date)")
	for _, style := range []string{"ISO, DMY", "ISO, YMD"} {
		exec(t, conn, "SET DateStyle = '"+style+"'")
		env := Env{DateStyle: style, TimeZone: time.UTC}
		for _, in := range dateCorpus {
			srv := insertText(t, conn, "ds", []byte(in))
			v, err := (Type{Base: Date}).ParseText([]byte(in), env)
			var text, bin []byte
			if err == nil {
				text = Type{Base: Date}.AppendText(nil, v, env)
				bin = Type{Base: Date}.AppendBinary(nil, v)
			}
			if diff := compareOutcome(srv, text, bin, err); diff != "" {
				t.Errorf("%s %q: %s", style, in, diff)
			}
		}
	}
}
