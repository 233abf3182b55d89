package rewrite

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
)

// Hole is a value of an encrypted column that the proxy must encrypt before
// the statement can go to the server: a constant of the client's SQL, a
// client parameter, or NULL.
type Hole struct {
	// Row says which salt the hole's cells are encrypted with: in an
	// INSERT, the 0-based VALUES row, or InsertPlan.Rows for a value of ON
	// CONFLICT DO UPDATE SET (see InsertPlan.ConflictSalt); 0 in an UPDATE,
	// which has one salt.
	Row    int
	Column *catalog.Column // the encrypted column
	// Const is the constant's text (as PostgreSQL would read it for the
	// column's type) when the client wrote a literal.
	Const *string
	// Param is the 1-based client parameter number when the client wrote
	// $n, 0 otherwise. Const == nil and Param == 0 means NULL (or DEFAULT:
	// encrypted columns have no server-side default).
	Param int
	// Expr, when set, is a constant expression the client wrote
	// (lower('X'), 40 + 2) for the proxy to compute once, before the
	// statement is sent (it reads no column and no parameter).
	Expr *ir.Expr
	// Generated is set for the value of a generated column the proxy
	// computes from the other values of its row (Generation), in an
	// INSERT: Const, Param and Expr are unset.
	Generated bool
	// Increment is +1 for UPDATE ... SET c = c + value, -1 for c - value,
	// 0 for an assignment. An increment's cells are the value's Add onion
	// ciphertext (Cells "_add", negated for -1) and the Paillier modulus
	// n² (Cells HomModulusCell, a numeric literal); see UpdatePlan.Render.
	Increment int
}

// HomModulusCell is the key in Cells of the numeric literal n² an
// increment's server-side product is reduced by.
const HomModulusCell = "nsq"

// Cells are the SQL expressions of an encrypted value's physical columns,
// keyed by onion.PhysicalColumn.Suffix ("_eq", "_ord", "_add", "_srch",
// "_val"): literals such as '\x...'::bytea for the simple protocol, or
// parameter references. A missing suffix is NULL.
type Cells map[string]*pg_query.Node

// InsertPlan is the rewritten form of INSERT ... VALUES (or DEFAULT VALUES).
type InsertPlan struct {
	Table *catalog.Table
	// Holes lists the values to encrypt: first those of the VALUES rows,
	// in row order (Row is the 0-based VALUES row), then those of ON
	// CONFLICT DO UPDATE SET, in SET order (Row is Rows). The proxy
	// encrypts each hole's cells with salt[h.Row] of Render.
	Holes []Hole
	// Rows is the number of VALUES rows (one salt each).
	Rows int
	// ConflictSalt is set when ON CONFLICT DO UPDATE SET gives encrypted
	// columns constants, parameters, NULL or DEFAULT (the holes with Row ==
	// Rows): Render then takes one more salt, salt[Rows], a fresh one for
	// those holes, which becomes the salt override of the columns they set
	// in the existing row (whose row salt the proxy does not know).
	ConflictSalt bool
	// Returning maps the rows of RETURNING to the client's columns; nil
	// without RETURNING.
	Returning *Projection

	version  int32
	base     *pg_query.InsertStmt // the server statement, but its VALUES and its ON CONFLICT SET list
	rows     [][]*pg_query.Node   // the physical VALUES lists, nil where Render puts a salt or cells
	targets  []insertTarget       // per logical target column of the statement
	conflict []dmlSetItem         // the planned ON CONFLICT DO UPDATE SET list
}

type insertTarget struct {
	col    *catalog.Column        // nil for a plain column
	layout []onion.PhysicalColumn // its physical columns, in order
}

// PlanInsert rewrites INSERT INTO t [(cols)] VALUES (...), ... [ON
// CONFLICT ...] [RETURNING ...] and INSERT INTO t DEFAULT VALUES for a
// table with encrypted columns. st is not modified.
//
// Values of encrypted columns must be constants, parameters, NULL or
// DEFAULT (which is NULL: encrypted columns have no server default); they
// become Holes whose cells use the row's salt, so the salt override
// columns stay NULL. A client parameter that is the value of an encrypted
// column may not be used elsewhere in the statement.
//
// ON CONFLICT: DO NOTHING, with or without a conflict target; a target
// naming an encrypted column names its Eq onion (c__eq), on which
// PlanCreate puts the UNIQUE or PRIMARY KEY constraint (its Eq onion is
// DET), so the server detects a duplicate exactly when the plaintexts are
// equal. DO UPDATE SET plain = <expression not touching encrypted
// columns>, enc = EXCLUDED.enc (each physical column from EXCLUDED's, and
// the salt override from coalesce(EXCLUDED.c__salt, EXCLUDED.pgonion_salt),
// since the excluded row's cells used that row's salt), enc = constant,
// parameter, NULL or DEFAULT (holes with Row == Rows and ConflictSalt, see
// Render), and DO UPDATE ... WHERE over plain columns. RETURNING projects
// encrypted columns like SELECT (see projectTargetList).
//
// Refused with 0A000: INSERT ... SELECT, WITH, ORDER BY/LIMIT/OFFSET on
// VALUES, expressions for encrypted columns, writing a physical column the
// proxy owns (pgonion_salt, c__eq, ...), and ON CONFLICT clauses touching
// encrypted columns otherwise than above (an expression, collation or
// operator class over one in the conflict target, enc = EXCLUDED.other or
// enc = expression in DO UPDATE SET, ...).
func PlanInsert(st Statement, t *catalog.Table) (*InsertPlan, error) {
	ins := st.Tree.Stmt.GetInsertStmt()
	if ins == nil {
		return nil, fmt.Errorf("rewrite: not an INSERT statement")
	}
	if ins.WithClause != nil {
		return nil, Refusal("WITH ... INSERT into table %s with encrypted columns is not supported", t.Name)
	}
	var valuesLists []*pg_query.Node
	switch sel := ins.SelectStmt.GetSelectStmt(); {
	case ins.SelectStmt == nil:
		// DEFAULT VALUES: one row, with nothing but its salt.
		valuesLists = []*pg_query.Node{pg_query.MakeListNode(nil)}
	case sel == nil || len(sel.ValuesLists) == 0:
		return nil, Refusal("INSERT ... SELECT into table %s with encrypted columns is not supported; use INSERT ... VALUES", t.Name)
	case sel.WithClause != nil || len(sel.SortClause) > 0 || sel.LimitCount != nil || sel.LimitOffset != nil:
		return nil, Refusal("WITH, ORDER BY, LIMIT and OFFSET on the VALUES of an INSERT into table %s with encrypted columns are not supported", t.Name)
	default:
		valuesLists = sel.ValuesLists
	}
	qualifier := ins.Relation.Relname
	if ins.Relation.Alias != nil {
		qualifier = ins.Relation.Alias.Aliasname
	}
	// The target columns: the listed ones, or all in table order.
	var names []string
	for _, n := range ins.Cols {
		rt := n.GetResTarget()
		if dmlInternalColumn(t, rt.Name) {
			return nil, Refusal("INSERT into column %s.%s is not supported: the proxy alone writes it", t.Name, rt.Name)
		}
		if len(rt.Indirection) > 0 {
			return nil, Refusal("INSERT into a subfield or element of column %s.%s is not supported", t.Name, rt.Name)
		}
		names = append(names, rt.Name)
	}
	if names == nil && ins.SelectStmt != nil {
		for _, c := range t.Columns {
			names = append(names, c.Name)
		}
	}
	// Encrypted columns with a DEFAULT the row does not name get it from
	// the proxy (the server cannot apply it): as if listed with DEFAULT.
	implicit := len(names)
	listed := map[string]bool{}
	for _, n := range names {
		listed[n] = true
	}
	for _, c := range t.Columns {
		if c.Policy != catalog.Plain && (HasDefault(&c) || c.Generation != nil) && !listed[c.Name] {
			names = append(names, c.Name)
		}
	}
	p := &InsertPlan{Table: t, Rows: len(valuesLists), version: st.version}
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
	for r, vl := range valuesLists {
		items := vl.GetList().Items
		if len(items) > implicit {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "INSERT has more expressions than target columns"}
		}
		if len(ins.Cols) == 0 || len(items) == implicit {
			// Without a column list a short row takes the defaults of
			// the columns it leaves out, as on the server; then come
			// the added defaults.
			items = slices.Clone(items)
			for len(items) < len(names) {
				items = append(items, &pg_query.Node{Node: &pg_query.Node_SetToDefault{SetToDefault: &pg_query.SetToDefault{Location: -1}}})
			}
		}
		var row []*pg_query.Node
		row = append(row, nil) // the salt, rendered later
		for i, item := range items {
			tg := p.targets[i]
			if tg.col == nil {
				if err := dmlFindRef(item, t, nil).exprRefusal(t.Name, "VALUES"); err != nil {
					return nil, err
				}
				row = append(row, item)
				continue
			}
			h := Hole{Row: r, Column: tg.col}
			switch {
			case tg.col.Generation == nil:
				if err := holeValue(item, &h, t.Name, "INSERT into"); err != nil {
					return nil, err
				}
			case item.GetSetToDefault() != nil:
				h.Generated = true
			default:
				return nil, GeneratedWriteError(tg.col.Name, false)
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
	p.base = &pg_query.InsertStmt{Relation: ins.Relation, Cols: cols, Override: ins.Override}
	if ins.OnConflictClause != nil {
		if err := p.planConflict(ins.OnConflictClause, qualifier); err != nil {
			return nil, err
		}
	}
	returning, proj, err := dmlReturning(ins.ReturningList, t, qualifier, false)
	if err != nil {
		return nil, err
	}
	p.Returning = proj
	p.base.ReturningList = returning
	rest := []protoreflect.Message{p.base.ProtoReflect()}
	for _, row := range p.rows {
		for _, n := range row {
			if n != nil {
				rest = append(rest, n.ProtoReflect())
			}
		}
	}
	for _, it := range p.conflict {
		for _, n := range it.fixed {
			rest = append(rest, n.ProtoReflect())
		}
	}
	if err := dmlCheckParams(p.Holes, t.Name, rest...); err != nil {
		return nil, err
	}
	return p, nil
}

// planConflict plans the ON CONFLICT clause into p.base.OnConflictClause
// (without its SET list, which Render adds from p.conflict).
func (p *InsertPlan) planConflict(oc *pg_query.OnConflictClause, qualifier string) error {
	t := p.Table
	out := &pg_query.OnConflictClause{Action: oc.Action, Location: oc.Location}
	if oc.Infer != nil {
		infer, err := insertConflictTarget(oc.Infer, t, qualifier)
		if err != nil {
			return err
		}
		out.Infer = infer
	}
	switch oc.Action {
	case pg_query.OnConflictAction_ONCONFLICT_NOTHING:
	case pg_query.OnConflictAction_ONCONFLICT_UPDATE:
		rows := []string{qualifier, "excluded"}
		items, holes, err := dmlPlanSet(oc.TargetList, t, dmlSetContext{
			statement: "ON CONFLICT DO UPDATE", rows: rows, excluded: true, row: p.Rows, firstHole: len(p.Holes)})
		if err != nil {
			return err
		}
		if err := dmlFindRef(oc.WhereClause, t, rows).clauseRefusal(t.Name, "ON CONFLICT DO UPDATE WHERE"); err != nil {
			return err
		}
		out.WhereClause = oc.WhereClause
		p.conflict = items
		p.Holes = append(p.Holes, holes...)
		p.ConflictSalt = len(holes) > 0
	default:
		return fmt.Errorf("rewrite: INSERT into %s: unknown ON CONFLICT action %v", t.Name, oc.Action)
	}
	p.base.OnConflictClause = out
	return nil
}

// insertConflictTarget rewrites the conflict target of ON CONFLICT: an
// encrypted column names its Eq onion; expressions, collations and
// operator classes over encrypted columns, and a predicate over them, are
// refused.
func insertConflictTarget(infer *pg_query.InferClause, t *catalog.Table, qualifier string) (*pg_query.InferClause, error) {
	rows := []string{qualifier}
	if err := dmlFindRef(infer.WhereClause, t, rows).clauseRefusal(t.Name, "ON CONFLICT target WHERE"); err != nil {
		return nil, err
	}
	out := &pg_query.InferClause{WhereClause: infer.WhereClause, Conname: infer.Conname, Location: infer.Location}
	for _, n := range infer.IndexElems {
		ie := n.GetIndexElem()
		c := t.Column(ie.GetName())
		if ie == nil || c == nil || c.Policy == catalog.Plain {
			if err := dmlFindRef(n, t, rows).clauseRefusal(t.Name, "ON CONFLICT target"); err != nil {
				return nil, err
			}
			out.IndexElems = append(out.IndexElems, n)
			continue
		}
		if len(ie.Collation) > 0 || len(ie.Opclass) > 0 {
			return nil, Refusal("a collation or operator class for encrypted column %s.%s in the ON CONFLICT target is not supported", t.Name, c.Name)
		}
		out.IndexElems = append(out.IndexElems, &pg_query.Node{Node: &pg_query.Node_IndexElem{IndexElem: &pg_query.IndexElem{
			Name: EqColumn(c.Name), Ordering: ie.Ordering, NullsOrdering: ie.NullsOrdering}}})
	}
	return out, nil
}

// holeValue fills h from one VALUES item of an encrypted column.
//
// construct names the statement for messages: "INSERT into", "UPDATE of",
// "ON CONFLICT DO UPDATE of".
func holeValue(item *pg_query.Node, h *Hole, table, construct string) error {
	n := item
	var cast *pg_query.TypeCast
	if tc := n.GetTypeCast(); tc != nil {
		n, cast = tc.Arg, tc // the column's type decides how the text is read
	}
	if cast != nil && len(cast.TypeName.GetTypmods()) > 0 {
		// A cast with a length or precision changes the value first.
		if n.GetParamRef() != nil {
			return Refusal("a parameter cast to %s for encrypted column %s.%s is not supported: send the value as it is to be stored", deparseType(cast.TypeName), table, h.Column.Name)
		}
		if err := holeValue(n, h, table, construct); err != nil || h.Const == nil {
			return err
		}
		v, err := applyLengthCast(cast.TypeName, *h.Const)
		if err != nil {
			return Refusal("%s constant for encrypted column %s.%s is not supported (%v)", deparseType(cast.TypeName), table, h.Column.Name, err)
		}
		h.Const = &v
		return nil
	}
	switch {
	case n.GetParamRef() != nil:
		h.Param = int(n.GetParamRef().Number)
		return nil
	case n.GetSetToDefault() != nil:
		if h.Column == nil {
			return nil
		}
		if d := h.Column.Default; d != nil {
			v := *d
			h.Const = &v
		}
		e, err := DefaultExprOf(h.Column)
		h.Expr = e
		return err
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
			if zeroNumber(strings.TrimPrefix(s, "-")) {
				// -0.0 is a numeric constant, which has no negative
				// zero: PostgreSQL stores 0 (-0 only from the string
				// '-0' into a float).
				s = strings.TrimPrefix(s, "-")
			}
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
		if err := holeValue(n.GetAExpr().Rexpr, &inner, table, construct); err != nil || inner.Const == nil {
			return Refusal("expression in %s encrypted column %s.%s: only constants, parameters and NULL are supported", construct, table, h.Column.Name)
		}
		s := "-" + *inner.Const
		if zeroNumber(*inner.Const) {
			s = *inner.Const // no negative zero (see above)
		}
		h.Const = &s
		return nil
	}
	// An expression reading no column that the proxy can compute; in an
	// INSERT's values also over parameters (LOWER($1)), bound at each
	// Bind (ExprParams).
	b := &aggBuilder{inputs: map[string]int{}}
	if e, err := b.expr(item); err == nil && len(b.targets) == 0 && (!hasParam(item) || construct == "INSERT into") {
		h.Expr = e
		return nil
	}
	return Refusal("expression in %s encrypted column %s.%s: only constants, parameters, NULL and constant expressions the proxy computes are supported", construct, table, h.Column.Name)
}

// hasParam reports whether n holds a parameter reference.
func hasParam(n *pg_query.Node) bool {
	found := map[int]bool{}
	dmlParams(n.ProtoReflect(), found)
	return len(found) > 0
}

// zeroNumber reports whether s, a numeric constant's text, is zero
// (0, 0.0, .0e5, 0e-3, ...).
func zeroNumber(s string) bool {
	digits := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '0':
			digits = true
		case c == '.' || c == '_':
		case c == 'e' || c == 'E':
			return digits
		default:
			return false
		}
	}
	return digits
}

func isNegation(e *pg_query.A_Expr) bool {
	names := stringList(e.Name)
	return e.Lexpr == nil && len(names) == 1 && names[0] == "-"
}

// Render returns the server SQL. cells gives the onion expressions of each
// hole, in Holes order (a missing suffix is NULL; a NULL value has no
// cells). salt gives the expressions of the salts, each onion.SaltSize
// fresh random bytes: salt[r] is row r's (written to pgonion_salt) for r <
// Rows, and when ConflictSalt is set, salt[Rows] is the one with which the
// proxy encrypted the ON CONFLICT DO UPDATE holes (written to the salt
// override of each encrypted column they set). In short: len(salt) is Rows,
// plus one with ConflictSalt, and hole h's cells are encrypted with
// salt[h.Row].
//
// For the simple protocol the cells and salts are literals (ByteaLiteral,
// Int8ArrayLiteral). For the extended protocol they are parameters
// (ParamNode) numbered after the client's own, which keep their numbers in
// the plain columns' expressions; a client parameter that only fed an
// encrypted column is then unreferenced, so its type must be declared in
// the Parse message and its Bind value replaced by NULL.
//
// Render does not modify the plan: it may be called again, and
// concurrently.
func (p *InsertPlan) Render(cells []Cells, salt []*pg_query.Node) (string, error) {
	salts := p.Rows
	if p.ConflictSalt {
		salts++
	}
	if len(cells) != len(p.Holes) || len(salt) != salts {
		return "", fmt.Errorf("rewrite: INSERT into %s: Render got %d cells and %d salts for %d holes and %d salts", p.Table.Name, len(cells), len(salt), len(p.Holes), salts)
	}
	lists := make([]*pg_query.Node, len(p.rows))
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
		lists[r] = pg_query.MakeListNode(out)
	}
	ins := &pg_query.InsertStmt{
		Relation: p.base.Relation,
		Cols:     p.base.Cols,
		SelectStmt: &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
			ValuesLists: lists, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg_query.SetOperation_SETOP_NONE}}},
		ReturningList: p.base.ReturningList,
		Override:      p.base.Override,
	}
	if oc := p.base.OnConflictClause; oc != nil {
		var conflictSalt *pg_query.Node
		if p.ConflictSalt {
			conflictSalt = salt[p.Rows]
		}
		ins.OnConflictClause = &pg_query.OnConflictClause{Action: oc.Action, Infer: oc.Infer,
			TargetList: dmlRenderSet(p.conflict, cells, conflictSalt), WhereClause: oc.WhereClause, Location: oc.Location}
	}
	sql, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_InsertStmt{InsertStmt: ins}}, p.version)
	if err != nil {
		return "", fmt.Errorf("rewrite: deparsing INSERT into %s: %w", p.Table.Name, err)
	}
	return sql, nil
}

// NumericLiteral returns the literal '<digits>'::numeric.
func NumericLiteral(digits string) *pg_query.Node {
	return typeCast(pg_query.MakeAConstStrNode(digits, -1), "numeric", false)
}

// CellLiteral returns the literal of a cell of PostgreSQL type sqlType
// ("uuid" or "bytea", see onion.CellSQLType), or NULL for nil. A uuid
// cell must be 16 bytes.
func CellLiteral(b []byte, sqlType string) *pg_query.Node {
	if sqlType != "uuid" || b == nil {
		return ByteaLiteral(b)
	}
	return typeCast(pg_query.MakeAConstStrNode(string(onion.AppendUUIDText(nil, b)), -1), "uuid", false)
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

// ArrayLiteral returns 'text'::elemType[].
func ArrayLiteral(text []byte, elemType string) *pg_query.Node {
	return typeCast(pg_query.MakeAConstStrNode(string(text), -1), elemType, true)
}

// TypedNull returns NULL::typ (NULL::typ[] with array set).
func TypedNull(typ string, array bool) *pg_query.Node {
	return typeCast(nullConst(), typ, array)
}

// StringLiteral returns 's'::text.
func StringLiteral(s string) *pg_query.Node {
	return typeCast(pg_query.MakeAConstStrNode(s, -1), "text", false)
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

// applyLengthCast is an explicit cast of the literal s to a string type
// with a length, as PostgreSQL evaluates it: varchar(n) keeps the first n
// characters; character(n) also drops the trailing blanks, which its
// conversion to the column's type (text, or character(m), which pads
// again) does not keep. Other types with a modifier are not applied.
func applyLengthCast(tn *pg_query.TypeName, s string) (string, error) {
	names := typeNames(tn)
	mods := typmods(tn)
	if len(mods) != 1 || mods[0] < 1 {
		return "", errors.New("its modifier is not applied by the proxy")
	}
	switch names[len(names)-1] {
	case "varchar":
		return truncateChars(s, int(mods[0])), nil
	case "bpchar":
		return strings.TrimRight(truncateChars(s, int(mods[0])), " "), nil
	}
	return "", errors.New("its modifier is not applied by the proxy")
}

// truncateChars keeps the first n characters (code points) of s.
func truncateChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
