package engine_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestByteFunctions: encode, decode, digest (pgcrypto) and the sha2
// functions over encrypted text and bytea columns, computed by the proxy
// on generated values, as the server computes them on plaintext
// (Django's SHA1 ... SHA512 are encode(digest(col, 'sha1'), 'hex')).
func TestByteFunctions(t *testing.T) {
	d := newTypeDiff(t, `CREATE EXTENSION IF NOT EXISTS pgcrypto`)
	d.both(`CREATE TABLE bf (id int PRIMARY KEY, s text, b bytea)`)
	rng := rand.New(rand.NewPCG(3, 22))
	for i := range 120 {
		n := rng.IntN(90)
		raw := make([]byte, n)
		for j := range raw {
			raw[j] = byte(rng.IntN(256))
		}
		var text strings.Builder
		alphabet := []rune("aZ09 \\'é日\n")
		for range rng.IntN(30) {
			text.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		d.both(fmt.Sprintf("INSERT INTO bf VALUES (%d, $1, $2)", i), pgx.QueryExecModeExec, text.String(), raw)
	}
	d.both(`INSERT INTO bf VALUES (1000, NULL, NULL), (1001, '', '')`)
	var queries []string
	for _, alg := range []string{"md5", "sha1", "sha224", "sha256", "sha384", "SHA512"} {
		queries = append(queries, fmt.Sprintf("SELECT id, encode(digest(s, '%s'), 'hex'), encode(digest(b, '%[1]s'), 'base64') FROM bf ORDER BY id", alg))
	}
	queries = append(queries,
		"SELECT id, encode(b, 'hex'), encode(b, 'base64'), encode(b, 'escape') FROM bf ORDER BY id",
		"SELECT id, encode(sha224(b), 'hex'), sha256(b), encode(sha384(b), 'hex'), sha512(b) FROM bf ORDER BY id",
		"SELECT id, decode(encode(b, 'base64'), 'base64') = b, decode(encode(b, 'hex'), 'hex') FROM bf ORDER BY id",
		"SELECT id FROM bf WHERE encode(digest(s, 'sha1'), 'hex') LIKE 'a%' ORDER BY id",
		"SELECT b, count(*) FROM bf GROUP BY b ORDER BY b",
	)
	d.compare(queries, nil)
	d.compare(nil, []string{"SELECT encode(digest(s, 'sha3-256'), 'hex') FROM bf"})
	d.compare([]string{"SELECT encode(b, 'base32') FROM bf"}, nil) // 22023 directly and through the proxy
}
