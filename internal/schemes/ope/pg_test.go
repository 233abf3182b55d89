package ope

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPostgresOrder stores 10,000 values (with the domain edges, negatives
// and duplicates) in each representation and checks that ORDER BY on the
// server returns the plaintext order.
func TestPostgresOrder(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)

	c32, _ := New32(testKey("pg32"))
	c64, _ := New64(testKey("pg64"))
	r := rand.New(rand.NewPCG(21, 21))
	const n = 10000
	p32 := pool32(r, n-12)
	p64 := pool64(r, n-15)

	if _, err := conn.Exec(ctx, `CREATE TABLE o32 (id int PRIMARY KEY, i8 int8, b bytea, num numeric);
		CREATE TABLE o64 (id int PRIMARY KEY, b bytea, num numeric)`); err != nil {
		t.Fatal(err)
	}
	var rows32, rows64 [][]any
	for i, v := range p32 {
		ct := c32.EncryptOrderPreserving(v)
		rows32 = append(rows32, []any{i, CiphertextToInt8(ct), AppendCiphertext32(nil, ct), Uint128{Lo: ct}.String()})
	}
	for i, v := range p64 {
		ct := c64.EncryptOrderPreserving(v)
		rows64 = append(rows64, []any{i, ct.Bytes(), ct.String()})
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"o32"}, []string{"id", "i8", "b", "num"}, pgx.CopyFromRows(rows32)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"o64"}, []string{"id", "b", "num"}, pgx.CopyFromRows(rows64)); err != nil {
		t.Fatal(err)
	}

	check := func(t *testing.T, query string, want []int) {
		t.Helper()
		rows, err := conn.Query(ctx, query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d rows, want %d", len(got), len(want))
		}
		for i := range got {
			if int(got[i]) != want[i] {
				t.Fatalf("%s: row %d is id %d, want %d", query, i, got[i], want[i])
			}
		}
	}
	order := func(n int, less func(a, b int) int) []int {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			if c := less(a, b); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		return idx
	}
	want32 := order(len(p32), func(a, b int) int { return cmp.Compare(p32[a], p32[b]) })
	want64 := order(len(p64), func(a, b int) int { return cmp.Compare(p64[a], p64[b]) })
	for _, tt := range []struct {
		name, query string
		want        []int
	}{
		{"32/int8", "SELECT id FROM o32 ORDER BY i8, id", want32},
		{"32/bytea", "SELECT id FROM o32 ORDER BY b, id", want32},
		{"32/numeric", "SELECT id FROM o32 ORDER BY num, id", want32},
		{"64/bytea", "SELECT id FROM o64 ORDER BY b, id", want64},
		{"64/numeric", "SELECT id FROM o64 ORDER BY num, id", want64},
	} {
		t.Run(tt.name, func(t *testing.T) { check(t, tt.query, tt.want) })
	}

	// A range predicate on ciphertexts selects the plaintext range.
	lo, hi := int32(-1000), int32(1000)
	var cnt int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM o32 WHERE i8 BETWEEN $1 AND $2",
		CiphertextToInt8(c32.EncryptOrderPreserving(lo)), CiphertextToInt8(c32.EncryptOrderPreserving(hi))).Scan(&cnt); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, v := range p32 {
		if v >= lo && v <= hi {
			want++
		}
	}
	if cnt != want || want == 0 {
		t.Errorf("BETWEEN: %d rows, want %d", cnt, want)
	}
	// MIN and MAX decrypt to the plaintext extremes. PostgreSQL 15 has no
	// min(bytea)/max(bytea): over bytea, MIN/MAX must become ORDER BY ...
	// LIMIT 1; over numeric (and int8) the aggregates work.
	var minN, maxN string
	var minB, maxB []byte
	if err := conn.QueryRow(ctx, "SELECT min(num)::text, max(num)::text FROM o64").Scan(&minN, &maxN); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT (SELECT b FROM o64 ORDER BY b LIMIT 1), (SELECT b FROM o64 ORDER BY b DESC LIMIT 1)").Scan(&minB, &maxB); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		ct   func() (Uint128, error)
		want int64
	}{
		{"min numeric", func() (Uint128, error) { return ParseUint128(minN) }, slices.Min(p64)},
		{"max numeric", func() (Uint128, error) { return ParseUint128(maxN) }, slices.Max(p64)},
		{"min bytea", func() (Uint128, error) { return Uint128FromBytes(minB) }, slices.Min(p64)},
		{"max bytea", func() (Uint128, error) { return Uint128FromBytes(maxB) }, slices.Max(p64)},
	} {
		ct, err := tt.ct()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if v, err := c64.DecryptOrderPreserving(ct); err != nil || v != tt.want {
			t.Errorf("%s decrypts to %d, %v; want %d", tt.name, v, err, tt.want)
		}
	}
}
