package pgarray

import (
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestParseText(t *testing.T) {
	s := func(v string) *string { return &v }
	for in, want := range map[string][]*string{
		`{}`:                         nil,
		`{1,2,NULL}`:                 {s("1"), s("2"), nil},
		`{x,it's,NULL}`:              {s("x"), s("it's"), nil},
		`{"a\"b","c,d",""}`:          {s(`a"b`), s("c,d"), s("")},
		`{ a , "NULL" , null }`:      {s("a"), s("NULL"), nil},
		`{2024-01-02,NULL}`:          {s("2024-01-02"), nil},
		`{"2024-06-01 10:00:00+02"}`: {s("2024-06-01 10:00:00+02")},
		`{a\,b}`:                     {s("a,b")},
	} {
		got, err := ParseText(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q %v, want %q", in, deref(got), err, deref(want))
		}
	}
	for _, in := range []string{``, `1,2`, `{"a}`, `{a,}`, `{{1},{2}}`, `{a"b}`, `{"a"x}`} {
		var pe *pgconn.PgError
		if _, err := ParseText(in); !errors.As(err, &pe) || pe.Code != "22P02" {
			t.Errorf("%s: %v, want 22P02", in, err)
		}
	}
}

func deref(v []*string) []string {
	var out []string
	for _, p := range v {
		if p == nil {
			out = append(out, "<NULL>")
		} else {
			out = append(out, *p)
		}
	}
	return out
}

func FuzzParseText(f *testing.F) {
	for _, s := range []string{`{}`, `{1,2,NULL}`, `{"a\"b","c,d",""}`, `{a\,b}`, `{ x }`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseText(s) // must not panic
	})
}
