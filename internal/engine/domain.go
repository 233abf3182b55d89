package engine

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/rewrite"
)

// domainOf is the rewrite.TypeLookup of CREATE TABLE: the domain that a
// column's type names, read from the server with every level under it
// (a domain over a domain has both levels' NOT NULL and CHECKs; its
// default is the nearest level's).
func (s *session) domainOf(names []string) (*rewrite.Domain, error) {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = quoteIdent(n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var d *rewrite.Domain
	err := s.e.cat.withConn(ctx, func(conn *pgx.Conn) error {
		var oid uint32
		if err := conn.QueryRow(ctx, `SELECT coalesce(to_regtype($1)::oid, 0)`, strings.Join(quoted, ".")).Scan(&oid); err != nil || oid == 0 {
			return err // not a type: the server reports it
		}
		for level := 0; ; level++ {
			var typtype, name, base string
			var baseOID uint32
			var notNull bool
			var dflt *string
			if err := conn.QueryRow(ctx, `SELECT typtype::text, format_type(oid, NULL), typbasetype, format_type(typbasetype, typtypmod),
				typnotnull, pg_get_expr(typdefaultbin, 0) FROM pg_type WHERE oid = $1`, oid).Scan(&typtype, &name, &baseOID, &base, &notNull, &dflt); err != nil {
				return err
			}
			if typtype != "d" {
				return nil
			}
			if d == nil {
				d = &rewrite.Domain{Name: name}
			}
			d.Base = base
			d.NotNull = d.NotNull || notNull
			if d.Default == nil {
				d.Default = dflt
			}
			rows, err := conn.Query(ctx, `SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint
				WHERE contypid = $1 AND contype = 'c' ORDER BY conname`, oid)
			if err != nil {
				return err
			}
			for rows.Next() {
				c := rewrite.DomainCheck{Domain: name}
				if err := rows.Scan(&c.Name, &c.Def); err != nil {
					rows.Close()
					return err
				}
				d.Checks = append(d.Checks, c)
			}
			if err := rows.Err(); err != nil {
				return err
			}
			oid = baseOID
		}
	})
	return d, err
}
