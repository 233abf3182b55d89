package rnd

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestPgcryptoPeel checks the property the RND layer is designed for: an
// unmodified PostgreSQL server with pgcrypto computes the same ciphertexts,
// and one UPDATE with PeelExpr turns every RND ciphertext into exactly the
// inner-layer bytes, for plaintexts of many lengths (including empty) and
// every key size.
func TestPgcryptoPeel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION pgcrypto"); err != nil {
		t.Fatal(err)
	}

	var lengths []int
	for n := 0; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 255, 256, 257, 1000, 4096)

	for _, keyLen := range []int{16, 24, 32} {
		t.Run(fmt.Sprintf("key%d", keyLen*8), func(t *testing.T) {
			key := make([]byte, keyLen)
			rand.Read(key)
			c, err := New(key)
			if err != nil {
				t.Fatal(err)
			}
			table := pgx.Identifier{fmt.Sprintf("onion%d", keyLen)}.Sanitize()
			if _, err := conn.Exec(ctx, "CREATE TABLE "+table+" (id int PRIMARY KEY, salt bytea NOT NULL, c bytea NOT NULL, inner_layer bytea NOT NULL)"); err != nil {
				t.Fatal(err)
			}
			inner := make(map[int][]byte)
			var rows [][]any
			for i, n := range lengths {
				// The inner bytes stand for a DET or OPE ciphertext.
				p := make([]byte, n)
				rand.Read(p)
				salt := NewSalt()
				inner[i] = p
				rows = append(rows, []any{i, salt, c.EncryptProbabilistically(nil, p, salt), p})
			}
			if _, err := conn.CopyFrom(ctx, pgx.Identifier{fmt.Sprintf("onion%d", keyLen)}, []string{"id", "salt", "c", "inner_layer"}, pgx.CopyFromRows(rows)); err != nil {
				t.Fatal(err)
			}

			// The server computes the same ciphertexts from the inner bytes.
			var mismatched int
			err = conn.QueryRow(ctx, "SELECT count(*) FROM "+table+
				" WHERE c IS DISTINCT FROM encrypt_iv(inner_layer, $1, encrypt(salt, $1, 'aes-ecb/pad:none'), 'aes-cbc/pad:pkcs')", key).Scan(&mismatched)
			if err != nil {
				t.Fatal(err)
			}
			if mismatched != 0 {
				t.Errorf("%d of %d ciphertexts differ from pgcrypto's encrypt_iv", mismatched, len(rows))
			}

			// Peeling with a wrong key fails the statement (bad padding)
			// rather than silently writing garbage; the transaction is
			// rolled back, so the data is intact.
			wrong := make([]byte, keyLen)
			rand.Read(wrong)
			if _, err := conn.Exec(ctx, "UPDATE "+table+" SET c = "+PeelExpr("c", "salt", "$1"), wrong); err == nil {
				t.Error("peeling with a wrong key succeeded")
			}

			// The peel: one UPDATE on the server.
			tag, err := conn.Exec(ctx, "UPDATE "+table+" SET c = "+PeelExpr("c", "salt", "$1"), key)
			if err != nil {
				t.Fatal(err)
			}
			if tag.RowsAffected() != int64(len(rows)) {
				t.Fatalf("peeled %d rows, want %d", tag.RowsAffected(), len(rows))
			}
			got, err := conn.Query(ctx, "SELECT id, c FROM "+table+" ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for got.Next() {
				var id int
				var peeled []byte
				if err := got.Scan(&id, &peeled); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(peeled, inner[id]) {
					t.Errorf("row %d (%d bytes): peeled to %x, want %x", id, len(inner[id]), trunc(peeled), trunc(inner[id]))
				}
				seen++
			}
			if err := got.Err(); err != nil {
				t.Fatal(err)
			}
			if seen != len(rows) {
				t.Fatalf("read %d rows, want %d", seen, len(rows))
			}
		})
	}
}

func trunc(b []byte) []byte {
	if len(b) > 32 {
		return b[:32]
	}
	return b
}

// TestPgcryptoPeelUnpadded is TestPgcryptoPeel for a Cipher without
// padding: pgcrypto's pad:none computes the same ciphertexts, and
// Cipher.PeelExpr turns them into the inner-layer bytes.
func TestPgcryptoPeelUnpadded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pgcrypto"); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	c, err := NewUnpadded(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE unpadded (id int PRIMARY KEY, salt bytea NOT NULL, c bytea NOT NULL, inner_layer bytea NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for i, n := range []int{16, 16, 32, 48, 256} {
		p := make([]byte, n)
		rand.Read(p)
		salt := NewSalt()
		ct := c.EncryptProbabilistically(nil, p, salt)
		if len(ct) != n || c.CiphertextLen(n) != n {
			t.Fatalf("%d-byte plaintext: %d-byte ciphertext", n, len(ct))
		}
		if back, err := c.Decrypt(nil, ct, salt); err != nil || !bytes.Equal(back, p) {
			t.Fatalf("%d-byte plaintext: decrypt = %x, %v", n, back, err)
		}
		rows = append(rows, []any{i, salt, ct, p})
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"unpadded"}, []string{"id", "salt", "c", "inner_layer"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	var mismatched int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM unpadded WHERE c IS DISTINCT FROM encrypt_iv(inner_layer, $1, encrypt(salt, $1, 'aes-ecb/pad:none'), 'aes-cbc/pad:none')", key).Scan(&mismatched); err != nil {
		t.Fatal(err)
	}
	if mismatched != 0 {
		t.Errorf("%d of %d ciphertexts differ from pgcrypto's encrypt_iv", mismatched, len(rows))
	}
	if _, err := conn.Exec(ctx, "UPDATE unpadded SET c = "+c.PeelExpr("c", "salt", "$1"), key); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM unpadded WHERE c IS DISTINCT FROM inner_layer").Scan(&mismatched); err != nil {
		t.Fatal(err)
	}
	if mismatched != 0 {
		t.Errorf("%d of %d rows peeled to other bytes than the inner layer", mismatched, len(rows))
	}
}

func TestUnpaddedRefusesUnalignedPlaintext(t *testing.T) {
	c, err := NewUnpadded(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 15, 17} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%d-byte plaintext encrypted without padding", n)
				}
			}()
			c.EncryptProbabilistically(nil, make([]byte, n), NewSalt())
		}()
	}
	if _, err := c.Decrypt(nil, make([]byte, 15), NewSalt()); err == nil {
		t.Error("15-byte ciphertext decrypted")
	}
}
