package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgarray"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// A foreign key between encrypted columns (an ORM's reference to a unique
// column, or to a primary key the client chooses) is enforced by the
// server on the Eq cells: the two columns join one join group, so that
// equal values have equal DET ciphertexts, and the constraint is declared
// over the cells. Moving a column into a group changes its keys (and may
// change its cells' types), which needs its table empty; ORMs add their
// foreign keys in the migration that creates the tables, before any row.

// planEncryptedForeignKey plans ALTER TABLE t ADD FOREIGN KEY (fk)
// REFERENCES pt (pk) where both columns are encrypted.
func (s *session) planEncryptedForeignKey(st rewrite.Statement, t, pt *catalog.Table, fk, pk []string) (*stmtPlan, error) {
	name := statementName(st)
	if len(fk) != 1 || len(pk) != 1 {
		return nil, rewrite.Refusal("%s: a foreign key of several columns to encrypted columns of %s is not supported", name, pt.Name)
	}
	self := t.ID == pt.ID
	child := t.Clone()
	parent := child
	if !self {
		parent = pt.Clone()
	}
	cc, pc := child.Column(fk[0]), parent.Column(pk[0])
	if cc == nil || pc == nil {
		return nil, fmt.Errorf("engine: %s: no column %s.%s or %s.%s", name, t.Name, fk[0], pt.Name, pk[0])
	}
	for _, c := range []*catalog.Column{cc, pc} {
		if c.Policy != catalog.Encrypted {
			return nil, rewrite.Refusal("%s: the server enforces a foreign key on equal values, which %s column %s never shows", name, c.Policy, c.Name)
		}
	}
	tc, err := rewrite.ColumnType(cc)
	if err != nil {
		return nil, err
	}
	tp, err := rewrite.ColumnType(pc)
	if err != nil {
		return nil, err
	}
	if !onion.EqJoinable(tc, tp) {
		return nil, rewrite.Refusal("%s: encrypted columns %s.%s (%s) and %s.%s (%s) cannot compare their ciphertexts", name, t.Name, cc.Name, tc, pt.Name, pc.Name, tp)
	}
	group := cmp.Or(pc.JoinGroup, cc.JoinGroup, rewrite.NewJoinGroupName(pc.ID, cc.ID))
	if cc.JoinGroup != "" && cc.JoinGroup != group {
		return nil, rewrite.Refusal("%s: %s.%s is in join group %s and %s.%s in %s; a column is in one group", name, t.Name, cc.Name, cc.JoinGroup, pt.Name, pc.Name, pc.JoinGroup)
	}
	base, err := s.ddlBase()
	if err != nil {
		return nil, err
	}
	key, format := catalog.GroupKey{Generation: s.e.generation()}, pc.CellFormat()
	if g, ok := base.Groups()[group]; ok {
		key, format = g.Newest, g.Format
	}
	var body strings.Builder
	changed := map[*catalog.Table]bool{}
	for _, x := range []struct {
		tbl *catalog.Table
		col *catalog.Column
	}{{parent, pc}, {child, cc}} {
		old := *x.col
		old.Onions = maps.Clone(x.col.Onions)
		x.col.JoinGroup, x.col.Format = group, format
		x.col.RootGeneration, x.col.GroupKeyVersion = key.Generation, key.Version
		x.col.Onions[string(onion.KindEq)] = string(onion.LayerDET)
		if old.JoinGroup == x.col.JoinGroup && old.CellFormat() == x.col.CellFormat() && old.GroupKey() == x.col.GroupKey() &&
			old.Onions[string(onion.KindEq)] == string(onion.LayerDET) {
			continue
		}
		if err := catalog.CheckJoinGroup(group, x.col.Policy, x.col.Capabilities); err != nil {
			return nil, rewrite.Refusal("%s: column %s.%s: %v", name, x.tbl.Name, x.col.Name, err)
		}
		rel := quoteIdent(x.tbl.Schema) + "." + quoteIdent(x.tbl.Physical)
		if !changed[x.tbl] {
			body.WriteString(emptyTableGuard(rel,
				fmt.Sprintf("%s needs encrypted column %s.%s under the keys of join group %s (the server enforces a foreign key on equal ciphertexts), but %s has rows", name, x.tbl.Name, x.col.Name, group, x.tbl.Name),
				"Add the foreign key before the table has rows (as in the migration that creates it), or re-key the column first (proxy columns set --join-group)."))
		}
		changed[x.tbl] = true
		cells, err := cellChanges(&old, x.col)
		if err != nil {
			return nil, err
		}
		for _, c := range cells {
			fmt.Fprintf(&body, "ALTER TABLE %s %s;\n", rel, c)
		}
	}
	sql, err := rewrite.ForeignKeyOverEq(st, fk, pk)
	if err != nil {
		return nil, err
	}
	body.WriteString(sql + ";\n")
	next := base
	for _, tbl := range []*catalog.Table{parent, child} {
		if changed[tbl] {
			body.WriteString(catalog.UpdateTableSQL(s.e.macKey(), tbl))
			next = next.WithTable(tbl)
		}
		if self {
			break
		}
	}
	if len(changed) > 0 {
		body.WriteString(catalog.SealSQL(s.e.macKey(), next, base.Version))
		s.planned(next)
		body.WriteString(fmt.Sprintf("RAISE NOTICE USING MESSAGE = %s;\n", quoteLiteral(fmt.Sprintf(
			"columns %s.%s and %s.%s are now in join group %s: the server enforces the foreign key on their equal ciphertexts, and so learns which rows are equal across them", t.Name, cc.Name, pt.Name, pc.Name, group))))
	}
	return &stmtPlan{sql: doBlock(body.String()), results: &ddlResult{tag: "ALTER TABLE", e: s.e}}, nil
}

// cellChanges returns the ALTER TABLE actions that turn column old's
// cells into column new's (of an empty table: values are not kept).
func cellChanges(old, new *catalog.Column) ([]string, error) {
	from, err := rewrite.PhysicalColumns(old)
	if err != nil {
		return nil, err
	}
	to, err := rewrite.PhysicalColumns(new)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, pc := range to {
		i := slices.IndexFunc(from, func(f onion.PhysicalColumn) bool { return f.Name == pc.Name })
		switch {
		case i < 0:
			out = append(out, fmt.Sprintf("ADD COLUMN %s %s", quoteIdent(pc.Name), pc.SQLType))
		case from[i].SQLType != pc.SQLType:
			out = append(out, fmt.Sprintf("ALTER COLUMN %s TYPE %s USING NULL", quoteIdent(pc.Name), pc.SQLType))
		}
	}
	for _, f := range from {
		if !slices.ContainsFunc(to, func(pc onion.PhysicalColumn) bool { return pc.Name == f.Name }) {
			out = append(out, "DROP COLUMN "+quoteIdent(f.Name))
		}
	}
	return out, nil
}

// primaryKey returns the logical columns of t's primary key as the server
// has it (an encrypted column's key is on its Eq cell), read in the
// session's transaction when it can (a table created in it is invisible
// to other connections).
func (s *session) primaryKey(t *catalog.Table) ([]string, error) {
	const q = `SELECT coalesce(array_agg(a.attname::text ORDER BY array_position(c.conkey, a.attnum)), '{}') FROM pg_constraint c
		JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
		WHERE c.contype = 'p' AND c.conrelid = to_regclass(%s)`
	rel := quoteIdent(t.Schema) + "." + quoteIdent(t.Physical)
	var keys []string
	c := &subqueryRows{}
	err := wire.ErrExecUnavailable
	if s.exec != nil {
		err = s.exec(fmt.Sprintf(q, quoteLiteral(rel)), c)
	}
	switch {
	case err == nil:
		if len(c.rows) == 1 && len(c.rows[0]) == 1 && c.rows[0][0] != nil {
			names, err := pgarray.ParseText(*c.rows[0][0])
			if err != nil {
				return nil, err
			}
			for _, n := range names {
				if n != nil {
					keys = append(keys, *n)
				}
			}
		}
	case !errors.Is(err, wire.ErrExecUnavailable):
		return nil, err
	default:
		ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
		defer cancel()
		err := s.e.cat.withConn(ctx, func(conn *pgx.Conn) error {
			return conn.QueryRow(ctx, fmt.Sprintf(q, "$1"), rel).Scan(&keys)
		})
		if err != nil {
			return nil, err
		}
	}
	for i, k := range keys {
		keys[i] = strings.TrimSuffix(k, rewrite.EqColumn(""))
	}
	return keys, nil
}
