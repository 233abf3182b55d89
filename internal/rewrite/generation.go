package rewrite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
)

// Stored generated columns over encrypted columns
//
//	c int GENERATED ALWAYS AS (a + b) STORED
//
// cannot be computed by the server over ciphertexts. The proxy records
// the expression with the column (catalog.Column.Generation), creates
// the column's cells as ordinary columns, and computes the value itself:
// in an INSERT, from the row's other values (a hole the engine fills,
// Hole.Generated); in an UPDATE that sets a column the expression reads,
// by read-modify-write, the expression over the row's new values
// (PlanUpdateRMW). The expression may read encrypted columns of its
// table only: the proxy does not know the values the server gives plain
// columns. Writes that cannot recompute it (COPY FROM, ON CONFLICT DO
// UPDATE of a column it reads) are refused.

// Generation is a generated column the proxy computes, planned.
type Generation struct {
	Column *catalog.Column
	// Expr is the expression; its inputs are Columns.
	Expr    *ir.Expr
	Columns []*catalog.Column
}

// PlanGeneration plans generated column c of table t.
func PlanGeneration(c *catalog.Column, t *catalog.Table) (*Generation, error) {
	if c.Generation == nil {
		return nil, fmt.Errorf("rewrite: column %s.%s is not generated", t.Name, c.Name)
	}
	what := fmt.Sprintf("generated column %s.%s", t.Name, c.Name)
	e, cols, err := planRowExpr(*c.Generation, t, what, "it computes generated columns from encrypted columns only")
	if err != nil {
		return nil, err
	}
	for _, in := range cols {
		if in.Generation != nil {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42P17", Message: fmt.Sprintf("cannot use generated column %q in column generation expression", in.Name),
				Detail: "A generated column cannot reference another generated column."}
		}
	}
	return &Generation{Column: c, Expr: e, Columns: cols}, nil
}

// Generated returns the generated columns of t the proxy computes.
func Generated(t *catalog.Table) []*catalog.Column {
	var out []*catalog.Column
	for i := range t.Columns {
		if c := &t.Columns[i]; c.Generation != nil && c.Policy != catalog.Plain {
			out = append(out, c)
		}
	}
	return out
}

// readByGeneration returns the first generated column of t whose
// expression reads column c, nil for none.
func readByGeneration(t *catalog.Table, c *catalog.Column) *catalog.Column {
	for _, g := range Generated(t) {
		if slices.Contains(generationInputs(g), c.Name) {
			return g
		}
	}
	return nil
}

// setGenerations returns the generated columns of t an UPDATE whose SET
// list (expanded) is targets must recompute, and whether it can without
// reading the rows: when every column each reads is set to a value the
// proxy knows (a constant, parameter, NULL or constant expression), as
// an ORM's save() sets every column.
func setGenerations(targets []*pg_query.Node, t *catalog.Table) (gens []*catalog.Column, known bool) {
	set := map[string]*pg_query.Node{}
	for _, n := range targets {
		rt := n.GetResTarget()
		if len(rt.Indirection) == 0 {
			set[rt.Name] = rt.Val
		}
	}
	known = true
	for _, g := range Generated(t) {
		inputs := generationInputs(g)
		_, self := set[g.Name]
		touched := self
		for _, name := range inputs {
			touched = touched || set[name] != nil
		}
		if !touched {
			continue
		}
		gens = append(gens, g)
		for _, name := range inputs {
			v, c := set[name], t.Column(name)
			h := Hole{Column: c}
			if v == nil || c == nil || v.GetSetToDefault() != nil || holeValue(v, &h, t.Name, "UPDATE of") != nil {
				known = false
			}
		}
	}
	return gens, known
}

// generationInputs are the names of the columns generated column g reads.
func generationInputs(g *catalog.Column) []string {
	n := generationNode(g)
	if n == nil {
		return nil
	}
	var out []string
	walkColumnRefs(n.ProtoReflect(), func(name string) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	})
	return out
}

// generationNode parses g's expression (nil if it does not parse, which
// PlanGeneration reports).
func generationNode(g *catalog.Column) *pg_query.Node {
	sts, err := Parse("SELECT " + *g.Generation)
	if err != nil || len(sts) != 1 {
		return nil
	}
	targets := sts[0].Tree.Stmt.GetSelectStmt().GetTargetList()
	if len(targets) != 1 {
		return nil
	}
	return targets[0].GetResTarget().Val
}

// GeneratedWriteError is PostgreSQL's error for a value other than
// DEFAULT written into generated column column by an INSERT (update
// false) or an UPDATE.
func GeneratedWriteError(column string, update bool) error {
	msg := fmt.Sprintf("cannot insert a non-DEFAULT value into column %q", column)
	if update {
		msg = fmt.Sprintf("column %q can only be updated to DEFAULT", column)
	}
	return &pgconn.PgError{Severity: "ERROR", Code: "428C9", Message: msg, Detail: fmt.Sprintf("Column %q is a generated column.", column)}
}

// exprSQL is expression expr as SQL text, the form the catalog records
// a check's or a generated column's expression in.
func exprSQL(expr *pg_query.Node, version int32) (string, error) {
	sel := &pg_query.SelectStmt{TargetList: []*pg_query.Node{pg_query.MakeResTargetNodeWithVal(expr, -1)}}
	text, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}, version)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(text, "SELECT "), nil
}

// renameColumnRefs returns expression sql (a check's or a generated
// column's) with its references to column from renamed to.
func renameColumnRefs(sql, from, to string, version int32) (string, error) {
	sts, err := Parse("SELECT " + sql)
	if err != nil || len(sts) != 1 {
		return "", fmt.Errorf("rewrite: a stored expression does not parse: %v", err)
	}
	val := sts[0].Tree.Stmt.GetSelectStmt().GetTargetList()[0].GetResTarget().Val
	root := &pg_query.ResTarget{Val: val}
	substituteRefs(root.ProtoReflect(), func(cr *pg_query.ColumnRef) *pg_query.Node {
		if fieldName(cr.Fields[len(cr.Fields)-1]) != from {
			return nil
		}
		fields := append([]*pg_query.Node{}, cr.Fields[:len(cr.Fields)-1]...)
		fields = append(fields, pg_query.MakeStrNode(to))
		return &pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: fields, Location: -1}}}
	})
	return exprSQL(root.Val, version)
}
