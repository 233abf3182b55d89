package hom

import (
	"context"
	"fmt"
	"io/fs"
	"math/big"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
	"github.com/pgonion/pgonion/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func connectWithSum(t testing.TB) (*pgx.Conn, context.Context) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(ctx) })
	sql, err := fs.ReadFile(migrations.FS, "0001_paillier_sum.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(sql)); err != nil {
		t.Fatal(err)
	}
	return conn, ctx
}

// insertRows stores ciphertexts (nil for NULL) as numeric and bytea.
func insertRows(t testing.TB, ctx context.Context, conn *pgx.Conn, table string, pk *PublicKey, groups []int32, cts []*Ciphertext) {
	t.Helper()
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE %s (id int, g int, c numeric, b bytea)", table)); err != nil {
		t.Fatal(err)
	}
	const batch = 5000
	for start := 0; start < len(cts); start += batch {
		end := min(start+batch, len(cts))
		var ids []int32
		var nums []*string
		var bs [][]byte
		for i := start; i < end; i++ {
			ids = append(ids, int32(i))
			if cts[i] == nil {
				nums = append(nums, nil)
				bs = append(bs, nil)
				continue
			}
			s := cts[i].Numeric()
			nums = append(nums, &s)
			bs = append(bs, pk.AppendCiphertext(nil, cts[i]))
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (id, g, c, b)
			SELECT * FROM unnest($1::int[], $2::int[], $3::text[]::numeric[], $4::bytea[])`, table),
			ids, groups[start:end], nums, bs); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPostgresSum checks the paillier_sum aggregate on a real server:
// negatives, NULLs ignored, GROUP BY, empty input.
func TestPostgresSum(t *testing.T) {
	sk := testKey(t, 2048)
	pk := sk.Public()
	e := newEnc(t, sk)
	conn, ctx := connectWithSum(t)

	r := mrand.New(mrand.NewPCG(5, 5))
	const rows = 300
	var cts []*Ciphertext
	var groups []int32
	sums := map[int32]*big.Int{}
	for i := 0; i < rows; i++ {
		g := int32(i % 3)
		groups = append(groups, g)
		if i%10 == 7 {
			cts = append(cts, nil) // NULL
			continue
		}
		v := r.Int64() >> r.UintN(63)
		if i%2 == 0 {
			v = -v
		}
		if i == 0 {
			v = -1 << 63
		}
		if sums[g] == nil {
			sums[g] = new(big.Int)
		}
		sums[g].Add(sums[g], big.NewInt(v))
		cts = append(cts, e.EncryptInt64(v))
	}
	insertRows(t, ctx, conn, "t", pk, groups, cts)
	total := new(big.Int)
	for _, s := range sums {
		total.Add(total, s)
	}

	var got *string
	if err := conn.QueryRow(ctx, "SELECT pgonion.paillier_sum(c, $1::numeric)::text FROM t", pk.NSquaredNumeric()).Scan(&got); err != nil {
		t.Fatal(err)
	}
	c, err := pk.ParseCiphertextNumeric(*got)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := sk.Decrypt(c); err != nil || m.Cmp(total) != 0 {
		t.Fatalf("server sum decrypts to %v, %v; want %v", m, err, total)
	}
	// The modulus as a literal in the SQL text works too (no parameter).
	if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT pgonion.paillier_sum(c, %s)::text FROM t WHERE g = 1", pk.NSquaredNumeric())).Scan(&got); err != nil {
		t.Fatal(err)
	}
	c, _ = pk.ParseCiphertextNumeric(*got)
	if m, err := sk.Decrypt(c); err != nil || m.Cmp(sums[1]) != 0 {
		t.Fatalf("group 1 sum decrypts to %v, %v; want %v", m, err, sums[1])
	}
	rs, err := conn.Query(ctx, "SELECT g, pgonion.paillier_sum(c, $1::numeric)::text FROM t GROUP BY g ORDER BY g", pk.NSquaredNumeric())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rs.Next() {
		var g int32
		var s string
		if err := rs.Scan(&g, &s); err != nil {
			t.Fatal(err)
		}
		c, err := pk.ParseCiphertextNumeric(s)
		if err != nil {
			t.Fatal(err)
		}
		if m, err := sk.Decrypt(c); err != nil || m.Cmp(sums[g]) != 0 {
			t.Errorf("group %d: %v, %v; want %v", g, m, err, sums[g])
		}
		n++
	}
	if rs.Err() != nil || n != 3 {
		t.Fatalf("GROUP BY: %d groups, %v", n, rs.Err())
	}
	// No rows, and only NULLs, give NULL like SUM.
	for _, q := range []string{
		"SELECT pgonion.paillier_sum(c, $1::numeric)::text FROM t WHERE false",
		"SELECT pgonion.paillier_sum(c, $1::numeric)::text FROM t WHERE c IS NULL",
	} {
		if err := conn.QueryRow(ctx, q, pk.NSquaredNumeric()).Scan(&got); err != nil || got != nil {
			t.Errorf("%s: %v, %v; want NULL", q, got, err)
		}
	}
	// The proxy-side path over the same rows (bytea) agrees.
	acc := pk.NewAccumulator()
	brs, err := conn.Query(ctx, "SELECT b FROM t WHERE b IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	for brs.Next() {
		if err := acc.AddBytes(brs.RawValues()[0]); err != nil {
			t.Fatal(err)
		}
	}
	if m, err := sk.Decrypt(acc.Sum()); err != nil || m.Cmp(total) != 0 {
		t.Fatalf("proxy sum: %v, %v", m, err)
	}
}

// TestPostgresPackedSum sums packed ciphertexts (three columns of a row in
// one plaintext) on the server: one aggregate gives the three sums.
func TestPostgresPackedSum(t *testing.T) {
	sk := testKey(t, 2048)
	pk := sk.Public()
	e := newEnc(t, sk)
	conn, ctx := connectWithSum(t)
	pack, err := NewPacking(pk, 96)
	if err != nil {
		t.Fatal(err)
	}
	r := mrand.New(mrand.NewPCG(6, 6))
	want := []*big.Int{new(big.Int), new(big.Int), new(big.Int)}
	var cts []*Ciphertext
	var groups []int32
	for i := 0; i < 60; i++ {
		vals := []int64{r.Int64() - r.Int64(), -int64(i), 1<<63 - 1}
		for j, v := range vals {
			want[j].Add(want[j], big.NewInt(v))
		}
		m, err := pack.Pack(vals)
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.Encrypt(m)
		if err != nil {
			t.Fatal(err)
		}
		cts = append(cts, c)
		groups = append(groups, 0)
	}
	insertRows(t, ctx, conn, "packed", pk, groups, cts)
	var s string
	if err := conn.QueryRow(ctx, "SELECT pgonion.paillier_sum(c, $1::numeric)::text FROM packed", pk.NSquaredNumeric()).Scan(&s); err != nil {
		t.Fatal(err)
	}
	c, err := pk.ParseCiphertextNumeric(s)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sk.Decrypt(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pack.Unpack(m)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if got[j].Cmp(want[j]) != 0 {
			t.Errorf("slot %d: %v, want %v", j, got[j], want[j])
		}
	}
}

// BenchmarkPaillierSum100k measures SUM over 100,000 rows with a 3072-bit
// key (and 2048 for the server path): on the server with the SQL aggregate,
// and in the proxy after fetching the ciphertexts as bytea (binary) or
// numeric (text). Reports µs/row. Run with -benchtime 1x: each iteration
// scans all rows.
func BenchmarkPaillierSum100k(b *testing.B) {
	const rows = 100_000
	for _, bits := range []int{3072, 2048} {
		sk := testKey(b, bits)
		pk := sk.Public()
		e, _ := NewEncrypter(sk, EncrypterOptions{PoolSize: 1})
		e.Close()
		// 256 fresh ciphertexts, combined pairwise into 100,000 distinct ones.
		base := make([]*Ciphertext, 256)
		baseVals := make([]int64, 256)
		for i := range base {
			baseVals[i] = int64(i*7919) - 1_000_000
			base[i] = e.EncryptInt64(baseVals[i])
		}
		cts := make([]*Ciphertext, rows)
		groups := make([]int32, rows)
		want := new(big.Int)
		for i := range cts {
			a, c := i%256, (i/256)%256
			cts[i] = pk.Add(base[a], base[c])
			want.Add(want, big.NewInt(baseVals[a]+baseVals[c]))
		}
		conn, ctx := connectWithSum(b)
		insertRows(b, ctx, conn, "big", pk, groups, cts)
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE big"); err != nil {
			b.Fatal(err)
		}
		check := func(b *testing.B, c *Ciphertext) {
			if m, err := sk.Decrypt(c); err != nil || m.Cmp(want) != 0 {
				b.Fatalf("sum %v, %v; want %v", m, err, want)
			}
		}
		perRow := func(b *testing.B, d time.Duration) {
			b.ReportMetric(float64(d.Microseconds())/rows/float64(b.N), "µs/row")
		}
		b.Run(fmt.Sprintf("server-sql/%d", bits), func(b *testing.B) {
			var d time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				var s string
				if err := conn.QueryRow(ctx, "SELECT pgonion.paillier_sum(c, $1::numeric)::text FROM big", pk.NSquaredNumeric()).Scan(&s); err != nil {
					b.Fatal(err)
				}
				d += time.Since(start)
				c, err := pk.ParseCiphertextNumeric(s)
				if err != nil {
					b.Fatal(err)
				}
				check(b, c)
			}
			perRow(b, d)
		})
		if bits != 3072 {
			continue
		}
		b.Run("proxy-bytea/3072", func(b *testing.B) {
			var d time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				acc := pk.NewAccumulator()
				rs, err := conn.Query(ctx, "SELECT b FROM big", pgx.QueryResultFormats{pgx.BinaryFormatCode})
				if err != nil {
					b.Fatal(err)
				}
				for rs.Next() {
					if err := acc.AddBytes(rs.RawValues()[0]); err != nil {
						b.Fatal(err)
					}
				}
				if rs.Err() != nil {
					b.Fatal(rs.Err())
				}
				d += time.Since(start)
				check(b, acc.Sum())
			}
			perRow(b, d)
		})
		b.Run("proxy-numeric/3072", func(b *testing.B) {
			var d time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				acc := pk.NewAccumulator()
				rs, err := conn.Query(ctx, "SELECT c::text FROM big")
				if err != nil {
					b.Fatal(err)
				}
				for rs.Next() {
					c, err := pk.ParseCiphertextNumeric(string(rs.RawValues()[0]))
					if err != nil {
						b.Fatal(err)
					}
					acc.Add(c)
				}
				d += time.Since(start)
				check(b, acc.Sum())
			}
			perRow(b, d)
		})
		b.Run("proxy-fetch-only-bytea/3072", func(b *testing.B) {
			var d time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				rs, _ := conn.Query(ctx, "SELECT b FROM big", pgx.QueryResultFormats{pgx.BinaryFormatCode})
				for rs.Next() {
				}
				d += time.Since(start)
			}
			perRow(b, d)
		})
	}
}
