package onion

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgonion/pgonion/internal/schemes/rnd"
)

// prefixOf is the plaintext prefix the Ord onion of a text column keeps.
func prefixOf(t Type, v Value) string {
	s := v.s
	if t.Base == Char {
		s = strings.TrimRight(s, " ")
	}
	return s[:min(len(s), OrdPrefixLen)]
}

// TestOrdText checks the prefix Ord onion of text types: order of the
// prefixes, ties, the superset filter, DecryptOrd and DecryptOrdPrefix.
func TestOrdText(t *testing.T) {
	// Sorted under the C collation (checked with Compare below).
	sorted := []string{
		"", "\x01", "\x01\x01", "\t", " ", "  x", "0", "A", "Z", "a", "a\x01", "a ", "ab", "ab\x01", "ab ",
		"abcdefg", "abcdefg\x01", "abcdefg ", "abcdefgh", "abcdefgh\x01", "abcdefgh ", "abcdefghi", "abcdefgz",
		"abcdefh", "b", "~", "\x7f", "é", "éé", "日", "日本", "日本語", "日本語です", "🎉", "\U0010FFFF",
	}
	for _, typ := range []Type{{Base: Text}, {Base: Varchar}, {Base: Varchar, Length: 40}, {Base: Char}, {Base: Char, Length: 12}} {
		t.Run(typ.String(), func(t *testing.T) {
			c := newColumn(t, typ, "ordtext-"+typ.String(), KindOrd)
			if !c.OrdIsPrefix() || !typ.OrdIsPrefix() {
				t.Fatal("OrdIsPrefix is false for a text type")
			}
			var vals []Value
			var opes [][]byte
			for _, s := range sorted {
				v := mustParse(t, typ, s)
				if typ.Base == Char && strings.TrimRight(s, " ") != s {
					continue // equal to the value without the spaces
				}
				rs := rnd.NewSalt()
				cells, err := c.Encrypt(v, rs)
				if err != nil {
					t.Fatal(err)
				}
				if len(cells.Ord) != 16 { // FormatUUID: no padding block
					t.Fatalf("%q: Ord cell of %d bytes", s, len(cells.Ord))
				}
				o, err := c.PeelRND(KindOrd, cells.Ord, rs)
				if err != nil {
					t.Fatal(err)
				}
				k, err := c.OrdOPE(typ.ComparisonType().mustValue(t, s), Exact)
				if err != nil || !bytes.Equal(k, o) {
					t.Fatalf("%q: OrdOPE differs from the stored OPE: %v", s, err)
				}
				if _, err := c.DecryptOrd(o, nil, LayerOPE); !errors.Is(err, ErrOrdPrefix) {
					t.Fatalf("%q: DecryptOrd: %v", s, err)
				}
				p, err := c.DecryptOrdPrefix(o, nil, LayerOPE)
				if err != nil || string(p) != prefixOf(typ, v) || p == nil {
					t.Fatalf("%q: DecryptOrdPrefix %q, %v", s, p, err)
				}
				vals = append(vals, v)
				opes = append(opes, o)
			}
			for i := range vals {
				for j := range vals {
					cmp := typ.Compare(vals[i], vals[j])
					if cmp != cmpInt(i, j) {
						t.Fatalf("Compare(%q, %q) = %d", vals[i].s, vals[j].s, cmp)
					}
					oc := bytes.Compare(opes[i], opes[j])
					samePrefix := prefixOf(typ, vals[i]) == prefixOf(typ, vals[j])
					// a < b implies OPE(a) <= OPE(b); equal prefixes give
					// equal ciphertexts, different ones ordered ones.
					if (samePrefix && oc != 0) || (!samePrefix && oc != cmp) {
						t.Fatalf("%q vs %q: OPE compare %d, Compare %d, same prefix %v", vals[i].s, vals[j].s, oc, cmp, samePrefix)
					}
				}
			}
		})
	}

	// Character values: trailing spaces are ignored, in the stored value
	// and in constants; OrdOPEText keeps them (comparison as text).
	c := newColumn(t, Type{Base: Char, Length: 5}, "ordtext-char", KindOrd)
	a, _ := c.OrdOPE(TextValue("ab"), Exact)
	b, _ := c.OrdOPE(TextValue("ab   "), Exact)
	x, _ := c.OrdOPEText("ab")
	y, _ := c.OrdOPEText("ab ")
	rs := rnd.NewSalt()
	cells, _ := c.Encrypt(mustParse(t, c.Type(), "ab"), rs)
	o, _ := c.PeelRND(KindOrd, cells.Ord, rs)
	if !bytes.Equal(a, b) || !bytes.Equal(a, o) || !bytes.Equal(a, x) || bytes.Compare(x, y) >= 0 {
		t.Fatal("character prefixes: trailing spaces mishandled")
	}
	if _, err := c.OrdOPE(IntValue(3), Exact); err == nil {
		t.Fatal("OrdOPE accepted an integer for a text column")
	}
	if got, err := c.DecryptOrdPrefix(nil, nil, LayerOPE); got != nil || err != nil {
		t.Fatalf("DecryptOrdPrefix(NULL): %q, %v", got, err)
	}
	if got, err := c.DecryptOrd(nil, nil, LayerOPE); !got.IsNull() || err != nil {
		t.Fatalf("DecryptOrd(NULL): %#v, %v", got, err)
	}

	// Tampering and impossible prefixes (a NUL before other bytes).
	o[15] ^= 1
	if _, err := c.DecryptOrdPrefix(o, nil, LayerOPE); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("tampered OPE: %v", err)
	}
	if _, err := c.DecryptOrd(o, nil, LayerOPE); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("tampered OPE, DecryptOrd: %v", err)
	}
	bad := c.encryptOPE(prefixOrdinal("a\x00b"))
	if _, err := c.DecryptOrdPrefix(bad, nil, LayerOPE); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("prefix with a NUL: %v", err)
	}
	if _, err := c.PeelRND(KindOrd, c.ordRND.EncryptProbabilistically(nil, bad, rs), rs); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("PeelRND of a prefix with a NUL: %v", err)
	}
	if _, err := c.PeelKey(KindOrd); err != nil {
		t.Fatal(err)
	}
	n := newColumn(t, Type{Base: Integer}, "ordtext-int", KindOrd)
	if n.OrdIsPrefix() {
		t.Fatal("OrdIsPrefix on an integer column")
	}
	if _, err := n.OrdOPEText("x"); err == nil {
		t.Fatal("OrdOPEText on an integer column")
	}
	if _, err := n.DecryptOrdPrefix([]byte("x"), nil, LayerOPE); err == nil {
		t.Fatal("DecryptOrdPrefix on an integer column")
	}
}

// mustValue parses s with t (a comparison type).
func (t Type) mustValue(tb testing.TB, s string) Value {
	tb.Helper()
	return mustParse(tb, t, s)
}

// genOrderText makes texts that share long prefixes, with bytes below and
// above the space, multibyte characters, empty strings and trailing spaces.
func genOrderText(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString(pick(r, "", "", "abcdefgh", "abcdefg", "abcdefgh", "abc", "日本語", "日本", "é", "Z", " ", "a", "ab"))
	n := r.IntN(6)
	for i := 0; i < n; i++ {
		b.WriteString(pick(r, "a", "b", " ", "  ", "\x01", "\t", "~", "\x7f", "é", "日", "🎉", "\U0010FFFF", "A", "0", "h", "i"))
	}
	if r.IntN(3) == 0 {
		b.WriteString(strings.Repeat(" ", 1+r.IntN(3)))
	}
	return b.String()
}

// TestDifferentialOrder checks Type.Compare against PostgreSQL's ORDER BY
// (C collation for texts) on random values of every type, and that the Ord
// onion orders as the server does: strictly for exact types, by prefix
// (ties allowed, never inversions) for text types.
func TestDifferentialOrder(t *testing.T) {
	conn := connect(t)
	exec(t, conn, "SET TimeZone = 'UTC'")
	env := Env{TimeZone: time.UTC}
	rng := rand.New(rand.NewPCG(*randomSeed, 0x6f72646572))
	n := 400
	if testing.Short() {
		n = 100
	}
	for _, d := range diffTypes() {
		t.Run(d.sql, func(t *testing.T) {
			if d.t.Base == JSON {
				t.Skip("json has no = and no order in PostgreSQL")
			}
			gen := generatorFor(d.t)
			var vals []Value
			var lits []string
			add := func(in string) {
				v, err := d.t.ParseText([]byte(in), env)
				if err != nil {
					return
				}
				vals = append(vals, v)
				lits = append(lits, string(d.t.AppendText(nil, v, env)))
			}
			for _, in := range d.corpus {
				add(in)
			}
			for len(vals) < len(d.corpus)+n {
				in := gen(rng)
				if d.t.isText() && rng.IntN(2) == 0 {
					in = genOrderText(rng)
				}
				add(in)
			}
			coll := ""
			if d.t.isText() {
				coll = ` COLLATE "C"`
			}
			q := fmt.Sprintf(`SELECT i, dense_rank() OVER (ORDER BY v%s) FROM unnest($1::%s[]) WITH ORDINALITY AS x(v, i) ORDER BY v%[1]s, i`, coll, d.sql)
			if d.t.Base == Array {
				// An array of arrays would be one array: cast each text.
				if d.t.Element().isText() {
					coll = ` COLLATE "C"`
				}
				q = fmt.Sprintf(`SELECT i, dense_rank() OVER (ORDER BY v::%[2]s%[1]s) FROM unnest($1::text[]) WITH ORDINALITY AS x(v, i) ORDER BY v::%[2]s%[1]s, i`, coll, d.sql)
			}
			res := conn.ExecParams(context.Background(), q, [][]byte{textArray(lits)}, nil, nil, nil).Read()
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if len(res.Rows) != len(vals) {
				t.Fatalf("%d rows for %d values", len(res.Rows), len(vals))
			}
			srvOrder := make([]int, len(vals))
			srvRank := make([]int, len(vals))
			for k, row := range res.Rows {
				i, _ := strconv.Atoi(string(row[0]))
				r, _ := strconv.Atoi(string(row[1]))
				srvOrder[k], srvRank[k] = i-1, r
			}
			ours := make([]int, len(vals))
			for i := range ours {
				ours[i] = i
			}
			// The proxy never orders jsonb: its Compare is checked for
			// equality only.
			equalityOnly := d.t.Base == JSONB || d.t.Base == Array && d.t.Elem == JSONB
			slices.SortStableFunc(ours, func(a, b int) int { return d.t.Compare(vals[a], vals[b]) })
			failures := 0
			for k := range ours {
				if equalityOnly {
					break
				}
				if ours[k] != srvOrder[k] && failures < 10 {
					failures++
					t.Errorf("position %d: server has %q, Compare sorts %q there", k, trunc(lits[srvOrder[k]]), trunc(lits[ours[k]]))
				}
			}
			for k := 1; k < len(srvOrder); k++ {
				a, b := vals[srvOrder[k-1]], vals[srvOrder[k]]
				if cmp := d.t.Compare(a, b); (cmp == 0) != (srvRank[k-1] == srvRank[k]) || cmp > 0 && !equalityOnly {
					t.Errorf("%q vs %q: Compare %d, server ranks %d %d", lits[srvOrder[k-1]], lits[srvOrder[k]], cmp, srvRank[k-1], srvRank[k])
				}
			}
			if !d.t.Supports(Ord) {
				return
			}
			// The Ord onion along the server's order.
			c := newColumn(t, d.t, "order-"+d.sql, KindOrd)
			opes := make([][]byte, len(vals))
			for i, v := range vals {
				rs := rnd.NewSalt()
				cells, err := c.Encrypt(v, rs)
				if err != nil {
					t.Fatal(err)
				}
				if opes[i], err = c.PeelRND(KindOrd, cells.Ord, rs); err != nil {
					t.Fatal(err)
				}
			}
			ties := 0
			for k := 1; k < len(srvOrder); k++ {
				i, j := srvOrder[k-1], srvOrder[k]
				oc := bytes.Compare(opes[i], opes[j])
				equal := srvRank[k-1] == srvRank[k]
				switch {
				case equal && oc != 0:
					t.Errorf("%q = %q on the server, OPE differ", lits[i], lits[j])
				case !equal && oc > 0:
					t.Errorf("%q < %q on the server, OPE inverted", lits[i], lits[j])
				case !equal && oc == 0:
					if !c.OrdIsPrefix() || prefixOf(d.t, vals[i]) != prefixOf(d.t, vals[j]) {
						t.Errorf("%q < %q on the server, equal OPE", lits[i], lits[j])
					}
					ties++
				case c.OrdIsPrefix() && oc < 0 && prefixOf(d.t, vals[i]) == prefixOf(d.t, vals[j]):
					t.Errorf("%q and %q have one prefix, different OPE", lits[i], lits[j])
				}
			}
			t.Logf("%d values, %d prefix ties between distinct neighbours", len(vals), ties)
		})
	}
}
