package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/pglocale"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Encrypted text columns under a collation of their own
// (catalog.Column.Collation) have an Eq onion only: the server compares
// their ciphertexts for equality, which a deterministic collation decides
// byte for byte. The proxy orders and case-maps text as the database's
// default collation does, where that orders by bytes (pglocale), so it
// refuses to compute with their values (split execution, residual
// conditions, checks, generated columns, read-modify-write) rather than
// answer in the wrong order, unless the column's collation is C or POSIX
// in a database whose own settings are byte order and C case.

// collationRefusal refuses computing with the values of encrypted column
// c of table in the proxy when it has such a collation (nil otherwise).
func (e *Engine) collationRefusal(table string, c *catalog.Column) error {
	if c == nil || c.Collation == "" {
		return nil
	}
	if (c.Collation == "C" || c.Collation == "POSIX") && pglocale.IsC(e.cat.ctype) && pglocale.ByteOrder(e.cat.collation) {
		return nil
	}
	return rewrite.Refusal("computing with encrypted column %s.%s in the proxy is not supported: its collation is %q, and the proxy orders and case-maps text only as the database's default collation does (the server can compare it for equality)", table, c.Name, c.Collation)
}

// checkCollations checks, at CREATE TABLE, that the collations of t's
// encrypted columns exist in the database and are deterministic: under a
// nondeterministic one, equal values may differ in bytes, and the server
// could not compare their ciphertexts.
func (e *Engine) checkCollations(t *catalog.Table) error {
	for _, c := range t.Columns {
		if c.Collation == "" || c.Policy == catalog.Plain {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var deterministic bool
		// As the server resolves it (search path; 42704 when unknown).
		err := e.work.QueryRow(ctx, `SELECT collisdeterministic FROM pg_collation WHERE oid = quote_ident($1)::regcollation`, c.Collation).Scan(&deterministic)
		cancel()
		var pe *pgconn.PgError
		switch {
		case errors.As(err, &pe):
			return pe
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("engine: collation %q has no pg_collation row", c.Collation)
		case err != nil:
			return fmt.Errorf("engine: looking up collation %q: %w", c.Collation, err)
		case !deterministic:
			return rewrite.Refusal("COLLATE %q on encrypted column %s.%s is not supported: the collation is nondeterministic, so equal values may differ in bytes, and the server compares ciphertexts", c.Collation, t.Name, c.Name)
		}
	}
	return nil
}
