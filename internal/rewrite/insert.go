package rewrite

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// Hole is a value of an encrypted column that the proxy must encrypt before
// the statement can go to the server: a constant of the client's SQL, a
// client parameter, or NULL.
type Hole struct {
	Row    int             // 0-based VALUES row
	Column *catalog.Column // the encrypted column
	// Const is the constant's text (as PostgreSQL would read it for the
	// column's type) when the client wrote a literal.
	Const *string
	// Param is the 1-based client parameter number when the client wrote
	// $n, 0 otherwise. Const == nil and Param == 0 means NULL (or DEFAULT:
	// encrypted columns have no server-side default).
	Param int
}

// Cells are the SQL expressions of an encrypted value's physical columns,
// keyed by onion.PhysicalColumn.Suffix ("_eq", "_ord", "_add", "_srch",
// "_val"): literals such as '\x...'::bytea for the simple protocol, or
// parameter references. A missing suffix is NULL.
type Cells map[string]*pg_query.Node

// InsertPlan is the rewritten form of INSERT ... VALUES.
type InsertPlan struct {
	Table *catalog.Table
	// Holes lists the values to encrypt, in row order.
	Holes []Hole
	// Rows is the number of VALUES rows (one salt each).
	Rows int

	stmt    Statement
	rows    [][]*pg_query.Node // the physical VALUES lists being built
	targets []insertTarget     // per logical target column of the statement
}

type insertTarget struct {
	col    *catalog.Column        // nil for a plain column
	layout []onion.PhysicalColumn // its physical columns, in order
}

// PlanInsert rewrites INSERT INTO t [(cols)] VALUES (...), ... for a table
// with encrypted columns. Values of encrypted columns must be constants,
// parameters, NULL or DEFAULT; RETURNING, ON CONFLICT and INSERT ... SELECT
// over encrypted columns are refused (for now).
func PlanInsert(st Statement, t *catalog.Table) (*InsertPlan, error) {
	ins := st.Tree.Stmt.GetInsertStmt()
	if ins == nil {
		return nil, fmt.Errorf("rewrite: not an INSERT statement")
	}
	if ins.WithClause != nil {
		return nil, Refusal("WITH ... INSERT into table %s with encrypted columns is not supported", t.Name)
	}
	if ins.OnConflictClause != nil {
		return nil, Refusal("ON CONFLICT on table %s with encrypted columns is not supported", t.Name)
	}
	if len(ins.ReturningList) > 0 {
		return nil, Refusal("RETURNING on table %s with encrypted columns is not supported yet", t.Name)
	}
	sel := ins.SelectStmt.GetSelectStmt()
	if sel == nil || len(sel.ValuesLists) == 0 {
		return nil, Refusal("INSERT ... SELECT into table %s with encrypted columns is not supported; use INSERT ... VALUES", t.Name)
	}
	// The target columns: the listed ones, or all in table order.
	var names []string
	for _, n := range ins.Cols {
		rt := n.GetResTarget()
		if len(rt.Indirection) > 0 {
			return nil, Refusal("INSERT into a subfield or element of column %s.%s is not supported", t.Name, rt.Name)
		}
		names = append(names, rt.Name)
	}
	if names == nil {
		for _, c := range t.Columns {
			names = append(names, c.Name)
		}
	}
	p := &InsertPlan{Table: t, Rows: len(sel.ValuesLists), stmt: st}
	var cols []*pg_query.Node
	cols = append(cols, pg_query.MakeResTargetNodeWithName(SaltColumn, -1))
	for _, name := range names {
		c := t.Column(name)
		if c == nil {
			// Let the server report the unknown column exactly as usual.
			cols = append(cols, pg_query.MakeResTargetNodeWithName(name, -1))
			p.targets = append(p.targets, insertTarget{})
			continue
		}
		if c.Policy == catalog.Plain {
			cols = append(cols, pg_query.MakeResTargetNodeWithName(name, -1))
			p.targets = append(p.targets, insertTarget{})
			continue
		}
		_, layout, err := columnLayout(c)
		if err != nil {
			return nil, err
		}
		// A new row's cells use the row salt: the override stays NULL.
		layout = slices.DeleteFunc(layout, func(pc onion.PhysicalColumn) bool { return pc.Suffix == SaltSuffix })
		tg := insertTarget{col: c, layout: layout}
		for _, pc := range layout {
			cols = append(cols, pg_query.MakeResTargetNodeWithName(pc.Name, -1))
		}
		p.targets = append(p.targets, tg)
	}
	for r, vl := range sel.ValuesLists {
		items := vl.GetList().Items
		if len(items) > len(names) {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "INSERT has more expressions than target columns"}
		}
		var row []*pg_query.Node
		row = append(row, nil) // the salt, rendered later
		for i, item := range items {
			tg := p.targets[i]
			if tg.col == nil {
				row = append(row, item)
				continue
			}
			h := Hole{Row: r, Column: tg.col}
			if err := holeValue(item, &h, t.Name); err != nil {
				return nil, err
			}
			p.Holes = append(p.Holes, h)
			for range tg.layout {
				row = append(row, nil) // rendered later
			}
		}
		// Columns without a value in this row (fewer expressions than
		// targets) are an error on the server too; keep the count.
		p.rows = append(p.rows, row)
	}
	ins.Cols = cols
	return p, nil
}

// holeValue fills h from one VALUES item of an encrypted column.
func holeValue(item *pg_query.Node, h *Hole, table string) error {
	n := item
	if tc := n.GetTypeCast(); tc != nil {
		n = tc.Arg // the column's type decides how the text is read
	}
	switch {
	case n.GetParamRef() != nil:
		h.Param = int(n.GetParamRef().Number)
		return nil
	case n.GetSetToDefault() != nil:
		return nil
	case n.GetAConst() != nil:
		c := n.GetAConst()
		if c.Isnull {
			return nil
		}
		var s string
		switch v := c.Val.(type) {
		case *pg_query.A_Const_Sval:
			s = v.Sval.Sval
		case *pg_query.A_Const_Ival:
			s = strconv.FormatInt(int64(v.Ival.Ival), 10)
		case *pg_query.A_Const_Fval:
			s = v.Fval.Fval
		case *pg_query.A_Const_Boolval:
			s = strconv.FormatBool(v.Boolval.Boolval)
		case *pg_query.A_Const_Bsval:
			return Refusal("bit-string constant for encrypted column %s.%s is not supported", table, h.Column.Name)
		default:
			return Refusal("constant for encrypted column %s.%s is not supported", table, h.Column.Name)
		}
		h.Const = &s
		return nil
	case n.GetAExpr() != nil && isNegation(n.GetAExpr()):
		// -5 parses as the unary minus of 5.
		inner := Hole{Column: h.Column}
		if err := holeValue(n.GetAExpr().Rexpr, &inner, table); err != nil || inner.Const == nil {
			return Refusal("expression in INSERT into encrypted column %s.%s: only constants, parameters and NULL are supported", table, h.Column.Name)
		}
		s := "-" + *inner.Const
		h.Const = &s
		return nil
	}
	return Refusal("expression in INSERT into encrypted column %s.%s: only constants, parameters and NULL are supported", table, h.Column.Name)
}

func isNegation(e *pg_query.A_Expr) bool {
	names := stringList(e.Name)
	return e.Lexpr == nil && len(names) == 1 && names[0] == "-"
}

// Render returns the server SQL: cells gives the onion expressions of each
// hole (in Holes order), salt the expression of each row's salt.
//
// For the simple protocol the cells are ciphertext literals (ByteaLiteral,
// Int8ArrayLiteral). For the extended protocol they are parameters
// (ParamNode) numbered after the client's own, which keep their numbers in
// the plain columns' expressions; a client parameter that only fed an
// encrypted column is then unreferenced, so its type must be declared in
// the Parse message and its Bind value replaced by NULL.
func (p *InsertPlan) Render(cells []Cells, salt []*pg_query.Node) (string, error) {
	if len(cells) != len(p.Holes) || len(salt) != p.Rows {
		return "", fmt.Errorf("rewrite: Render got %d cells and %d salts for %d holes and %d rows", len(cells), len(salt), len(p.Holes), p.Rows)
	}
	sel := p.stmt.Tree.Stmt.GetInsertStmt().SelectStmt.GetSelectStmt()
	h := 0
	for r, row := range p.rows {
		out := make([]*pg_query.Node, 0, len(row))
		out = append(out, salt[r])
		i := 1
		for _, tg := range p.targets {
			if i >= len(row) {
				break
			}
			if tg.col == nil {
				out = append(out, row[i])
				i++
				continue
			}
			for _, pc := range tg.layout {
				n := cells[h][pc.Suffix]
				if n == nil {
					n = nullConst()
				}
				out = append(out, n)
			}
			i += len(tg.layout)
			h++
		}
		sel.ValuesLists[r] = pg_query.MakeListNode(out)
	}
	return p.stmt.Deparse()
}

// ByteaLiteral returns '\x<hex>'::bytea, or NULL for nil.
func ByteaLiteral(b []byte) *pg_query.Node {
	if b == nil {
		return nullConst()
	}
	const hexdigits = "0123456789abcdef"
	s := make([]byte, 2, 2+2*len(b))
	s[0], s[1] = '\\', 'x'
	for _, c := range b {
		s = append(s, hexdigits[c>>4], hexdigits[c&15])
	}
	return typeCast(pg_query.MakeAConstStrNode(string(s), -1), "bytea", false)
}

// Int8ArrayLiteral returns '{...}'::int8[], or NULL for nil.
func Int8ArrayLiteral(v []int64) *pg_query.Node {
	if v == nil {
		return nullConst()
	}
	b := []byte{'{'}
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, x, 10)
	}
	b = append(b, '}')
	return typeCast(pg_query.MakeAConstStrNode(string(b), -1), "int8", true)
}

// ParamNode returns $n.
func ParamNode(n int) *pg_query.Node { return pg_query.MakeParamRefNode(int32(n), -1) }

func nullConst() *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{Isnull: true, Location: -1}}}
}

func typeCast(arg *pg_query.Node, typ string, array bool) *pg_query.Node {
	tn := &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(typ)}, Typemod: -1, Location: -1}
	if array {
		tn.ArrayBounds = []*pg_query.Node{pg_query.MakeIntNode(-1)}
	}
	return &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{Arg: arg, TypeName: tn, Location: -1}}}
}
