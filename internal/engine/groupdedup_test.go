package engine

import (
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// TestRawGroupsKey checks that the bytes of different rows never make the
// same key: NULL, empty and values split differently across columns.
func TestRawGroupsKey(t *testing.T) {
	r := &rawGroups{cols: [][]int{{0, 1}, {2}}, groups: map[string]*group{}}
	rows := [][][]byte{
		{nil, []byte("ab"), []byte("c")},
		{[]byte(""), []byte("ab"), []byte("c")},
		{[]byte("a"), []byte("b"), []byte("c")},
		{[]byte("ab"), nil, []byte("c")},
		{[]byte("ab"), []byte(""), []byte("c")},
		{[]byte("ab"), []byte("c"), []byte("")},
		{[]byte("ab"), []byte("c"), nil},
		{[]byte{0xff, 0xff}, []byte{0xff, 0xff}, nil},
	}
	for i, vals := range rows {
		if g := r.lookup(&pgproto3.DataRow{Values: vals}); g != nil {
			t.Fatalf("row %d found the group of an earlier row", i)
		}
		r.store(&group{seq: int64(i)})
	}
	for i, vals := range rows {
		g := r.lookup(&pgproto3.DataRow{Values: vals})
		if g == nil || g.seq != int64(i) {
			t.Fatalf("row %d: group %v", i, g)
		}
	}
}

// TestRawGroupsGivesUp checks the trial: lookups stop paying when fewer
// than one row in four finds its group.
func TestRawGroupsGivesUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		every int // a new key every n rows
		want  bool
	}{
		{"unique rows", 1, false},
		{"pairs", 2, true},
		{"one in four new", 4, true},
		{"all new but one in five", 0, false},
	} {
		r := &rawGroups{cols: [][]int{{0}}, groups: map[string]*group{}}
		ok := true
		for i := 0; i < rawTrial+100 && ok; i++ {
			key := i
			switch {
			case tc.every > 0:
				key = i / tc.every
			case i%5 == 4:
				key = i - 1
			}
			row := &pgproto3.DataRow{Values: [][]byte{[]byte{byte(key >> 16), byte(key >> 8), byte(key)}}}
			if r.lookup(row) == nil {
				r.store(&group{})
			}
			ok = r.worthIt()
		}
		if ok != tc.want {
			t.Errorf("%s: worth it %v after %d lookups (%d hits), want %v", tc.name, ok, r.tried, r.hits, tc.want)
		}
	}
}
