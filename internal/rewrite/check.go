package rewrite

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
)

// CHECK constraints over encrypted columns cannot be evaluated by the
// server over ciphertexts. The proxy records them in the catalog (their
// expression as SQL over the logical columns) and evaluates them itself
// on every row an INSERT, UPDATE or COPY writes, with the expressions of
// split execution (Expr): a row is refused when its check is false
// (NULL passes, as in PostgreSQL). A check may read only encrypted
// columns of its table: the proxy does not know the values the server
// gives plain columns (defaults, sequences).

// Check is a recorded CHECK constraint, planned.
type Check struct {
	Name   string
	Domain string // the domain whose CHECK it is, if any
	// Expr is the expression; its inputs are Columns.
	Expr *ir.Expr
	// Columns are the encrypted columns the expression reads, by input.
	Columns []*catalog.Column
}

// PlanCheck plans recorded check c of table t.
func PlanCheck(c catalog.Check, t *catalog.Table) (*Check, error) {
	e, cols, err := planRowExpr(c.Expr, t, fmt.Sprintf("CHECK constraint %s of table %s", c.Name, t.Name), "split the constraint")
	if err != nil {
		return nil, err
	}
	return &Check{Name: c.Name, Domain: c.Domain, Expr: e, Columns: cols}, nil
}

// planRowExpr plans expression sql over the logical columns of one row
// of t (a check's or a generated column's), which the proxy evaluates
// on the row's values: it may read encrypted columns of t only. what
// names the expression in messages; hint ends the refusal of a plain
// column.
func planRowExpr(sql string, t *catalog.Table, what, hint string) (*ir.Expr, []*catalog.Column, error) {
	sts, err := Parse("SELECT " + sql)
	if err != nil || len(sts) != 1 {
		return nil, nil, fmt.Errorf("rewrite: %s: %v", what, err)
	}
	st := sts[0]
	targets := st.Tree.Stmt.GetSelectStmt().GetTargetList()
	if len(targets) != 1 {
		return nil, nil, fmt.Errorf("rewrite: %s is not one expression", what)
	}
	val := targets[0].GetResTarget().Val
	if hasSubLink(val) || containsAggregate(val) {
		// Refused by the server for CHECKs and generated columns; the
		// server never sees these.
		return nil, nil, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: fmt.Sprintf("%s: subqueries and aggregate functions are not allowed", what)}
	}
	b := &aggBuilder{inputs: map[string]int{}, st: st}
	e, err := b.expr(val)
	if err != nil {
		return nil, nil, Refusal("%s over encrypted columns: %s", what, message(err))
	}
	var cols []*catalog.Column
	for _, n := range b.targets {
		fields := n.GetResTarget().Val.GetColumnRef().Fields
		name := fieldName(fields[len(fields)-1])
		if len(fields) > 2 || len(fields) == 2 && fieldName(fields[0]) != t.Name {
			return nil, nil, Refusal("%s refers to another table", what)
		}
		col := t.Column(name)
		switch {
		case col == nil:
			return nil, nil, &pgconn.PgError{Severity: "ERROR", Code: "42703", Message: fmt.Sprintf("column %q does not exist", name)}
		case col.Policy == catalog.Plain:
			return nil, nil, Refusal("%s reads plain column %s besides encrypted ones: the proxy evaluates it, but it does not know the values the server gives plain columns; %s", what, name, hint)
		}
		cols = append(cols, col)
	}
	return e, cols, nil
}

// CheckedSalt wraps the salt node of a row an UPDATE or ON CONFLICT DO
// UPDATE writes: the server raises check violation violated (a text
// node: NULL for none) of table t when it writes the row, as PostgreSQL
// checks only rows it changes; a domain's CHECK with the domain's
// message.
func CheckedSalt(salt, violated *pg_query.Node, t *catalog.Table) *pg_query.Node {
	args := []*pg_query.Node{salt, typeCast(violated, "text", false), StringLiteral(t.Name)}
	domains := map[string]string{}
	for _, c := range t.Checks {
		if c.Domain != "" {
			domains[c.Name] = c.Domain
		}
	}
	if len(domains) > 0 {
		b, _ := json.Marshal(domains) // strings only: cannot fail
		args = append(args, typeCast(StringLiteral(string(b)), "jsonb", false))
	}
	return pg_query.MakeFuncCallNode([]*pg_query.Node{pg_query.MakeStrNode(ProxySchema), pg_query.MakeStrNode("check_row")}, args, -1)
}

// message is err's message without its SQLSTATE.
func message(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

// checkOf records CHECK constraint con (of table, in a CREATE TABLE of
// version) for the proxy, under its name or the one PostgreSQL would
// give it; taken are the names given so far.
func checkOf(con *pg_query.Constraint, table string, version int32, taken []catalog.Check) (catalog.Check, error) {
	if con.IsNoInherit {
		return catalog.Check{}, Refusal("CHECK ... NO INHERIT over encrypted columns of %s is not supported", table)
	}
	text, err := exprSQL(con.RawExpr, version)
	if err != nil {
		return catalog.Check{}, fmt.Errorf("rewrite: deparsing a CHECK of %s: %w", table, err)
	}
	name := con.Conname
	if name == "" {
		var cols []string
		walkColumnRefs(con.RawExpr.ProtoReflect(), func(c string) {
			if !slices.Contains(cols, c) {
				cols = append(cols, c)
			}
		})
		col := ""
		if len(cols) == 1 {
			col = cols[0]
		}
		name = defaultCheckName(table, col, taken)
	}
	return catalog.Check{Name: name, Expr: text}, nil
}

// defaultCheckName is the name PostgreSQL gives an unnamed CHECK:
// table_column_check when it reads one column, table_check otherwise,
// with a number added until it is free, the names shortened to fit 63
// bytes.
func defaultCheckName(table, column string, taken []catalog.Check) string {
	for n := 0; ; n++ {
		label := "check"
		if n > 0 {
			label += strconv.Itoa(n)
		}
		name := objectName(table, column, label)
		if !slices.ContainsFunc(taken, func(c catalog.Check) bool { return c.Name == name }) {
			return name
		}
	}
}

// objectName joins name1, name2 (if any) and label with underscores,
// shortening the longer name first until the result fits 63 bytes, as
// PostgreSQL's makeObjectName does.
func objectName(name1, name2, label string) string {
	overhead := len(label) + 1
	if name2 != "" {
		overhead++
	}
	for len(name1)+len(name2)+overhead > 63 {
		if len(name1) >= len(name2) {
			name1 = name1[:len(name1)-1]
		} else {
			name2 = name2[:len(name2)-1]
		}
	}
	if name2 == "" {
		return name1 + "_" + label
	}
	return name1 + "_" + name2 + "_" + label
}
