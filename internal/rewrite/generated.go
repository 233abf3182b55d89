package rewrite

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
)

// Server-generated values (DESIGN §4). The values of serial, identity and
// sequence-default columns are chosen by the server, so encrypting them
// would hide nothing from it; and a foreign key is enforced by the server
// on equal values, so a column referencing a plain column must be plain
// too. Unless a policy is declared for them, such columns are stored
// plain, and CREATE TABLE says so in a NOTICE (CreatePlan.Notices). A
// declared encrypted policy is refused for them, as before.

// RefLookup reports whether column of schema.table is stored plain (a
// table the catalog does not manage is all plain); column "" asks about
// the table's primary key (plain when all its columns are). known is
// false when it cannot tell (no such table or key).
type RefLookup func(schema, table, column string) (plain, known bool)

// serverGenerated returns, by column, why the server generates the values
// of the columns of cs ("" for none): their type (serial, bigserial,
// ...), an identity, or a sequence default (DEFAULT nextval(...)).
func serverGenerated(cs *pg_query.CreateStmt) map[string]string {
	out := map[string]string{}
	for _, n := range cs.TableElts {
		cd := n.GetColumnDef()
		if cd == nil {
			continue
		}
		names := typeNames(cd.TypeName)
		switch {
		case isSerial(names):
			out[cd.Colname] = names[len(names)-1]
		case cd.Identity != "":
			out[cd.Colname] = "an identity"
		}
		if nextvalDefault(cd.RawDefault) {
			out[cd.Colname] = "a sequence default"
		}
		for _, cn := range cd.Constraints {
			c := cn.GetConstraint()
			switch {
			case c.GetContype() == pg_query.ConstrType_CONSTR_IDENTITY:
				out[cd.Colname] = "an identity"
			case c.GetContype() == pg_query.ConstrType_CONSTR_DEFAULT && nextvalDefault(c.RawExpr):
				out[cd.Colname] = "a sequence default"
			}
		}
	}
	return out
}

// nextvalDefault reports whether a default expression is nextval(...)
// (possibly cast, as pg_dump writes it).
func nextvalDefault(n *pg_query.Node) bool {
	for n.GetTypeCast() != nil {
		n = n.GetTypeCast().Arg
	}
	fc := n.GetFuncCall()
	if fc == nil {
		return false
	}
	names := stringList(fc.Funcname)
	return names[len(names)-1] == "nextval"
}

// fkRef is the column a foreign key column references.
type fkRef struct {
	schema, table, column string // column "" for the referenced table's primary key
}

// foreignRefs returns, by referencing column of cs, what it references:
// from REFERENCES column constraints and FOREIGN KEY table constraints
// (each column of a multi-column key to its counterpart).
func foreignRefs(cs *pg_query.CreateStmt, schema string) map[string]fkRef {
	out := map[string]fkRef{}
	add := func(c *pg_query.Constraint, from []string) {
		if c.Pktable == nil {
			return
		}
		s := c.Pktable.Schemaname
		if s == "" {
			s = schema
		}
		to := stringList(c.PkAttrs)
		for i, f := range from {
			r := fkRef{schema: s, table: c.Pktable.Relname}
			if i < len(to) {
				r.column = to[i]
			} else if len(to) > 0 {
				continue
			} else if len(from) > 1 {
				continue // a multi-column key to a primary key: not resolved
			}
			out[f] = r
		}
	}
	for _, n := range cs.TableElts {
		if cd := n.GetColumnDef(); cd != nil {
			for _, cn := range cd.Constraints {
				if c := cn.GetConstraint(); c.GetContype() == pg_query.ConstrType_CONSTR_FOREIGN {
					add(c, []string{cd.Colname})
				}
			}
			continue
		}
		if c := n.GetConstraint(); c.GetContype() == pg_query.ConstrType_CONSTR_FOREIGN {
			add(c, stringList(c.FkAttrs))
		}
	}
	return out
}

// createPolicies decides the policy of each column of cs: the declared or
// default one, but plain for columns the server generates and columns
// referencing plain columns when no policy is declared for them. notices
// say which columns that made plain, and why.
func createPolicies(cs *pg_query.CreateStmt, schema, table string, policy PolicyFunc, refs RefLookup) (map[string]ColumnPolicy, []string, error) {
	qualified := schema + "." + table
	gen := serverGenerated(cs)
	out := map[string]ColumnPolicy{}
	var notices []string
	primary := primaryKeyOf(cs)
	for _, n := range cs.TableElts {
		cd := n.GetColumnDef()
		if cd == nil {
			continue
		}
		pol := policy(qualified, cd.Colname)
		if why := gen[cd.Colname]; why != "" && pol.Policy != catalog.Plain {
			if pol.Declared {
				return nil, nil, Refusal("%s on encrypted column %s.%s: the server would generate its values in plaintext; declare the column plain, or insert the values through the proxy", why, table, cd.Colname)
			}
			pol = ColumnPolicy{Policy: catalog.Plain}
			notices = append(notices, fmt.Sprintf("column %s.%s is stored plain: the server generates its values (%s), so encrypting them would hide nothing from it", table, cd.Colname, why))
		}
		out[cd.Colname] = pol
	}
	// Foreign keys, after the columns they may reference in this table.
	for col, r := range foreignRefs(cs, schema) {
		pol, ok := out[col]
		if !ok || pol.Policy == catalog.Plain || pol.Declared {
			continue
		}
		var plain bool
		switch {
		case r.schema == schema && r.table == table:
			cols := []string{r.column}
			if r.column == "" {
				cols = primary
			}
			plain = len(cols) > 0
			for _, c := range cols {
				plain = plain && out[c].Policy == catalog.Plain
			}
		case refs != nil:
			plain, _ = refs(r.schema, r.table, r.column)
		}
		if !plain {
			continue
		}
		out[col] = ColumnPolicy{Policy: catalog.Plain}
		target := r.table + "." + r.column
		if r.column == "" {
			target = r.table + "'s primary key"
		}
		notices = append(notices, fmt.Sprintf("column %s.%s is stored plain: it references %s, which is stored plain, and the server enforces the foreign key on equal values", table, col, target))
	}
	// Generated columns computed from plain columns only: the server
	// computes them from values it holds.
	for _, n := range cs.TableElts {
		cd := n.GetColumnDef()
		if cd == nil || out[cd.Colname].Policy == catalog.Plain || out[cd.Colname].Declared {
			continue
		}
		for _, cn := range cd.Constraints {
			c := cn.GetConstraint()
			if c.GetContype() != pg_query.ConstrType_CONSTR_GENERATED {
				continue
			}
			plain := true
			walkColumnRefs(c.RawExpr.ProtoReflect(), func(name string) {
				if p, ok := out[name]; !ok || p.Policy != catalog.Plain {
					plain = false
				}
			})
			if plain {
				out[cd.Colname] = ColumnPolicy{Policy: catalog.Plain}
				notices = append(notices, fmt.Sprintf("column %s.%s is stored plain: the server generates it from plain columns, so encrypting it would hide nothing from it", table, cd.Colname))
			}
		}
	}
	return out, notices, nil
}
