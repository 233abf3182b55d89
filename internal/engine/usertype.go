package engine

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/rewrite"
)

// userType is the rewrite.TypeLookup of CREATE TABLE: the domain or enum
// that a column's type names, read from the server. A domain comes with
// every level under it (a domain over a domain has both levels' NOT NULL
// and CHECKs; its default is the nearest level's) down to its base type.
func (s *session) userType(names []string) (*rewrite.UserType, error) {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = quoteIdent(n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var u *rewrite.UserType
	err := s.e.cat.withConn(ctx, func(conn *pgx.Conn) error {
		var oid uint32
		if err := conn.QueryRow(ctx, `SELECT coalesce(to_regtype($1)::oid, 0)`, strings.Join(quoted, ".")).Scan(&oid); err != nil || oid == 0 {
			return err // not a type: the server reports it
		}
		var d *rewrite.Domain
		for {
			var typtype, name, base string
			var baseOID uint32
			var notNull bool
			var dflt *string
			if err := conn.QueryRow(ctx, `SELECT typtype::text, format_type(oid, NULL), typbasetype, format_type(typbasetype, typtypmod),
				typnotnull, pg_get_expr(typdefaultbin, 0) FROM pg_type WHERE oid = $1`, oid).Scan(&typtype, &name, &baseOID, &base, &notNull, &dflt); err != nil {
				return err
			}
			switch {
			case typtype == "e" && d == nil:
				u = &rewrite.UserType{Enum: &rewrite.Enum{Name: name, OID: oid}}
				return nil
			case typtype == "e":
				d.Enum = &rewrite.Enum{Name: name, OID: oid}
				return nil
			case typtype != "d":
				return nil
			}
			if d == nil {
				d = &rewrite.Domain{Name: name}
				u = &rewrite.UserType{Domain: d}
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
	return u, err
}

// checkUserTypeDDL refuses what would make the stored values of
// encrypted columns disagree with their type: renaming an enum's label
// (the cells hold the label) and DROP TYPE or DROP DOMAIN ... CASCADE
// (the server would drop the columns from the twins only). Other
// statements, and types no encrypted column uses, pass.
func (s *session) checkUserTypeDDL(st rewrite.Statement) error {
	var names [][]string
	what := ""
	switch n := st.Tree.Stmt.Node.(type) {
	case *pg_query.Node_AlterEnumStmt:
		if n.AlterEnumStmt.OldVal == "" {
			return nil // ADD VALUE: the proxy reads new labels when it meets them
		}
		names, what = [][]string{stringNodes(n.AlterEnumStmt.TypeName)}, "ALTER TYPE ... RENAME VALUE"
	case *pg_query.Node_DropStmt:
		ds := n.DropStmt
		if ds.Behavior != pg_query.DropBehavior_DROP_CASCADE || ds.RemoveType != pg_query.ObjectType_OBJECT_TYPE && ds.RemoveType != pg_query.ObjectType_OBJECT_DOMAIN {
			return nil
		}
		for _, o := range ds.Objects {
			if tn := o.GetTypeName(); tn != nil {
				names = append(names, stringNodes(tn.Names))
			}
		}
		what = "DROP TYPE ... CASCADE"
	default:
		return nil
	}
	if len(s.e.cat.snapshot().Tables()) == 0 {
		return nil
	}
	for _, nm := range names {
		quoted := make([]string, len(nm))
		for i, x := range nm {
			quoted[i] = quoteIdent(x)
		}
		ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
		var table string
		err := s.e.cat.withConn(ctx, func(conn *pgx.Conn) error {
			// A twin's column of the type, of an array of it, or of a
			// domain over it.
			return conn.QueryRow(ctx, `SELECT coalesce(min(c.relname || '.' || a.attname), '') FROM pg_catalog.pg_attribute a
				JOIN pgonion.l_twins m ON m.twin = a.attrelid JOIN pg_catalog.pg_class c ON c.oid = m.physical
				JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
				WHERE NOT a.attisdropped AND to_regtype($1) IS NOT NULL
				AND (t.oid = to_regtype($1) OR t.typelem = to_regtype($1) OR t.typbasetype = to_regtype($1))`, strings.Join(quoted, ".")).Scan(&table)
		})
		cancel()
		if err != nil {
			return err
		}
		if table != "" {
			return rewrite.Refusal("%s on type %s is not supported: encrypted column %s stores values of it, which the server cannot change", what, strings.Join(nm, "."), table)
		}
	}
	return nil
}

func stringNodes(nodes []*pg_query.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.GetString_().GetSval()
	}
	return out
}
