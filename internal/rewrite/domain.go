package rewrite

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// Domains over the types the proxy encrypts. An encrypted column of a
// domain stores its base type's onions; the domain's NOT NULL, default
// and CHECKs become the column's (its CHECKs evaluated by the proxy,
// with VALUE read as the column), since the server sees only
// ciphertexts. The twin keeps the domain, so clients see it.

// UserType is a type a column names that the rewriter cannot read from
// its name: a domain or an enum, as the engine read it from the server
// (the rewriter does no I/O).
type UserType struct {
	Domain *Domain
	Enum   *Enum
}

// Enum is an enum type: its name as format_type prints it, and its OID.
type Enum struct {
	Name string
	OID  uint32
}

// Domain is a domain as the server defines it.
type Domain struct {
	Name    string // as format_type prints it
	Base    string // the base type under every level of domain, as format_type prints it
	Enum    *Enum  // the base type, when it is an enum
	NotNull bool   // at any level
	Default *string
	Checks  []DomainCheck // of every level
}

// DomainCheck is one CHECK of a domain: the domain (the level it is
// on), its name and its definition as pg_get_constraintdef prints it
// ("CHECK ((VALUE > 0))").
type DomainCheck struct{ Domain, Name, Def string }

// TypeLookup returns the domain or enum a column's type names, nil if it
// names neither (a base type, or a type that does not exist: the server
// reports that).
type TypeLookup func(names []string) (*UserType, error)

// applyDomain returns column cd of domain d as a column of d's base type
// carrying d's constraints: NOT NULL, CHECKs over the column (named as
// the domain names them), and the domain's default unless the column
// has its own. checks maps each CHECK added to its domain.
func applyDomain(cd *pg_query.ColumnDef, d *Domain, checks map[*pg_query.Constraint]string) (*pg_query.ColumnDef, error) {
	base, err := Parse("SELECT NULL::" + d.Base)
	if err != nil || len(base) != 1 {
		return nil, fmt.Errorf("rewrite: base type %q of domain %s does not parse: %v", d.Base, d.Name, err)
	}
	cd = proto.Clone(cd).(*pg_query.ColumnDef)
	cd.TypeName = base[0].Tree.Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val.GetTypeCast().TypeName
	if d.NotNull && !hasConstraint(cd, pg_query.ConstrType_CONSTR_NOTNULL) {
		cd.Constraints = append(cd.Constraints, pg_query.MakeNotNullConstraintNode(-1))
	}
	for _, c := range d.Checks {
		expr, err := domainCheckExpr(c.Def, cd.Colname)
		if err != nil {
			return nil, fmt.Errorf("rewrite: CHECK %s of domain %s: %w", c.Name, d.Name, err)
		}
		con := &pg_query.Constraint{Contype: pg_query.ConstrType_CONSTR_CHECK, Conname: c.Name, RawExpr: expr, InitiallyValid: true, Location: -1}
		checks[con] = c.Domain
		cd.Constraints = append(cd.Constraints, &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: con}})
	}
	if d.Default != nil && cd.RawDefault == nil && !hasConstraint(cd, pg_query.ConstrType_CONSTR_DEFAULT) {
		expr, err := parseExpr(*d.Default)
		if err != nil {
			return nil, fmt.Errorf("rewrite: default of domain %s: %w", d.Name, err)
		}
		cd.Constraints = append(cd.Constraints, &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: &pg_query.Constraint{
			Contype: pg_query.ConstrType_CONSTR_DEFAULT, RawExpr: expr, Location: -1}}})
	}
	return cd, nil
}

// domainCheckExpr reads a domain CHECK's definition as an expression over
// column: VALUE becomes a reference to it.
func domainCheckExpr(def, column string) (*pg_query.Node, error) {
	text := strings.TrimSuffix(strings.TrimSpace(def), " NOT VALID")
	if !strings.HasPrefix(text, "CHECK ") {
		return nil, fmt.Errorf("unexpected definition %q", def)
	}
	expr, err := parseExpr(strings.TrimPrefix(text, "CHECK "))
	if err != nil {
		return nil, err
	}
	root := &pg_query.ResTarget{Val: expr}
	substituteRefs(root.ProtoReflect(), func(cr *pg_query.ColumnRef) *pg_query.Node {
		if len(cr.Fields) != 1 || fieldName(cr.Fields[0]) != "value" {
			return nil
		}
		return &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{
			Fields: []*pg_query.Node{pg_query.MakeStrNode(column)}, Location: -1}}}
	})
	return root.Val, nil
}

// parseExpr parses one SQL expression.
func parseExpr(sql string) (*pg_query.Node, error) {
	sts, err := Parse("SELECT " + sql)
	if err != nil || len(sts) != 1 {
		return nil, fmt.Errorf("expression %q does not parse: %v", sql, err)
	}
	tl := sts[0].Tree.Stmt.GetSelectStmt().GetTargetList()
	if len(tl) != 1 {
		return nil, fmt.Errorf("expression %q does not parse as one", sql)
	}
	return tl[0].GetResTarget().Val, nil
}

// quoteString is s as a SQL string literal.
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
