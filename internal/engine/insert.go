package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/schemes/rnd"
)

// holesPlan is a statement whose values of encrypted columns (holes) the
// proxy encrypts: INSERT, UPDATE, INSERT ... ON CONFLICT DO UPDATE.
type holesPlan struct {
	table  *catalog.Table
	holes  []rewrite.Hole
	xs     []*encrypted // the column of each hole
	salts  int          // fresh salts the statement needs; hole h uses salt h.Row
	render func(cells []rewrite.Cells, salts []*pg_query.Node) (string, error)
	// whereHoles are the comparison values of an UPDATE's or DELETE's
	// WHERE, filled (rewrite.FillHoles) before render; where holds their
	// columns.
	whereHoles []rewrite.CmpHole
	where      []*cmpHole
	needs      []rewrite.Need // of WHERE, checked again at each Bind
	// marks are the columns whose first increment the statement
	// records; guard sets the one-time condition that records them
	// (pgonion.apply_change of its argument) before render.
	marks []catalog.ID
	guard func(arg *pg_query.Node)
	// checks are the table's proxy-enforced CHECKs; rows from
	// partialFrom on are updates of some columns only.
	checks      *rowChecks
	partialFrom int
	// gens computes the generated holes (Hole.Generated).
	gens *rowGenerations
	// exprParams are the types of the client's parameters that holes'
	// expressions read (LOWER($1)), bound at each Bind.
	exprParams map[int]onion.Type
}

// planInsert encrypts the values of INSERT ... VALUES: in the SQL text for
// the simple protocol, as added parameters at each Bind for the extended
// protocol.
func (s *session) planInsert(st rewrite.Statement, t *catalog.Table, ext *extended) (*stmtPlan, error) {
	if ext != nil {
		// A bulk INSERT ... SELECT * FROM UNNEST of array parameters.
		up, err := rewrite.PlanUnnestParams(st, t)
		if err != nil {
			return nil, err
		}
		if up != nil {
			return s.planUnnestParams(up, t, rewrite.ParamRefs(st), ext)
		}
	}
	// A bulk INSERT ... SELECT * FROM UNNEST of array constants is the
	// INSERT ... VALUES it means.
	st, unnest, err := rewrite.UnnestValues(st)
	if err != nil {
		return nil, err
	}
	if !unnest && rewrite.InsertSelect(st) != nil {
		return s.planInsertSelect(st, t, ext)
	}
	clientRefs := rewrite.ParamRefs(st)
	p, err := rewrite.PlanInsert(st, t)
	if err != nil {
		return nil, err
	}
	hp := &holesPlan{holes: p.Holes, salts: p.Rows, render: p.Render, partialFrom: p.Rows}
	if p.ConflictSalt {
		hp.salts++
	}
	return s.planHoles(t, hp, clientRefs, p.Returning, ext)
}

// planUpdate encrypts the values UPDATE sets, with one fresh salt for the
// statement (recorded in the columns' salt overrides).
func (s *session) planUpdate(st rewrite.Statement, t *catalog.Table, ext *extended) (*stmtPlan, error) {
	return s.planUpdateMarking(st, t, ext, nil)
}

// planUpdateMarking is planUpdate; marks are the columns whose first
// increment the statement records (markIncrements), once known.
func (s *session) planUpdateMarking(st rewrite.Statement, t *catalog.Table, ext *extended, marks []catalog.ID) (*stmtPlan, error) {
	clientRefs := rewrite.ParamRefs(st)
	var orig rewrite.Statement
	if marks == nil {
		checks, err := s.e.checksOf(t)
		if err != nil {
			return nil, err
		}
		rmw, err := rewrite.PlanUpdateRMW(st, t, checkColumns(checks))
		if err != nil {
			return nil, err
		}
		if rmw != nil {
			return s.planUpdateRMW(rmw, t, checks, ext)
		}
		orig = st.Clone() // PlanUpdate rewrites st's tree; a second plan needs the client's
	}
	p, err := rewrite.PlanUpdate(st, t)
	if err != nil {
		return nil, err
	}
	if marks == nil {
		if ids := newIncrements(p, s.recordedTable(t)); len(ids) > 0 {
			// Plan again as the statement leaves the catalog: the
			// columns read from their Add onion, RETURNING of them
			// refused.
			return s.planUpdateMarking(orig, withIncremented(t, ids), ext, ids)
		}
	}
	if err := s.ensureLayers(p.Needs); err != nil {
		return nil, err
	}
	hp := &holesPlan{holes: p.Holes, salts: 1, render: func(cells []rewrite.Cells, salts []*pg_query.Node) (string, error) {
		return p.Render(cells, salts[0])
	}, whereHoles: p.Where, needs: p.Needs, marks: marks, guard: func(n *pg_query.Node) { p.Guard = n }}
	return s.planHoles(t, hp, clientRefs, p.Returning, ext)
}

// planDelete only decrypts what RETURNING returns.
func (s *session) planDelete(st rewrite.Statement, t *catalog.Table, ext *extended) (*stmtPlan, error) {
	clientRefs := rewrite.ParamRefs(st)
	p, err := rewrite.PlanDelete(st, t)
	if err != nil {
		return nil, err
	}
	if err := s.ensureLayers(p.Needs); err != nil {
		return nil, err
	}
	if len(p.Where) > 0 {
		hp := &holesPlan{render: func([]rewrite.Cells, []*pg_query.Node) (string, error) { return p.Deparse() }, whereHoles: p.Where, needs: p.Needs}
		return s.planHoles(t, hp, clientRefs, p.Returning, ext)
	}
	sp := &stmtPlan{sql: p.SQL}
	if p.Returning != nil {
		proj, err := s.e.newProjection(t, p.Returning.Columns, p.Returning.Salt)
		if err != nil {
			return nil, err
		}
		s.returnRows(sp, proj, ext)
	}
	return sp, nil
}

func (s *session) planHoles(t *catalog.Table, hp *holesPlan, clientRefs []int, returning *rewrite.Projection, ext *extended) (*stmtPlan, error) {
	hp.table = t
	var err error
	if hp.exprParams, err = s.constantHoles(t, hp.holes, ext); err != nil {
		return nil, err
	}
	checks, err := s.e.checksOf(t)
	if err != nil {
		return nil, err
	}
	hp.checks = checks
	if err := hp.checks.partialWrites(hp.holes, hp.partialFrom); err != nil {
		return nil, err
	}
	env, err := s.params.get()
	if err != nil {
		return nil, err
	}
	if hp.gens, err = s.e.generationsOf(t, env); err != nil {
		return nil, err
	}
	if err := hp.gens.partialWrites(hp.holes, hp.partialFrom); err != nil {
		return nil, err
	}
	hp.xs = make([]*encrypted, len(hp.holes))
	for i, h := range hp.holes {
		var err error
		if hp.xs[i], err = s.e.encrypted(t.Name, h.Column); err != nil {
			return nil, err
		}
	}
	hp.where = make([]*cmpHole, len(hp.whereHoles))
	for i, h := range hp.whereHoles {
		x, err := s.e.encrypted(t.Name, h.Column)
		if err != nil {
			return nil, err
		}
		hp.where[i] = &cmpHole{CmpHole: h, x: x}
	}
	var sp *stmtPlan
	if ext == nil {
		sp, err = s.holesLiterals(hp)
	} else {
		sp, err = s.holesParams(hp, clientRefs, ext)
	}
	if err != nil || returning == nil {
		return sp, err
	}
	proj, err := s.e.newProjection(t, returning.Columns, returning.Salt)
	if err != nil {
		return nil, err
	}
	s.returnRows(sp, proj, ext)
	return sp, nil
}

// holesLiterals renders the ciphertexts as literals.
func (s *session) holesLiterals(p *holesPlan) (*stmtPlan, error) {
	env, err := s.params.get()
	if err != nil {
		return nil, err
	}
	if len(p.holes) > 0 {
		if err := s.holdWrites(p.table); err != nil {
			return nil, err
		}
	}
	if len(p.marks) > 0 {
		change, err := s.markIncrements(p.table, p.marks)
		if err != nil {
			return nil, err
		}
		if change != "" {
			p.guard(rewrite.StringLiteral(change))
		}
	}
	salts := make([][]byte, p.salts)
	saltNodes := make([]*pg_query.Node, p.salts)
	for r := range salts {
		salts[r] = rnd.NewSalt()
		saltNodes[r] = rewrite.ByteaLiteral(salts[r])
	}
	cells := make([]rewrite.Cells, len(p.holes))
	vals := make([]onion.Value, len(p.holes))
	for i, h := range p.holes {
		if h.Param > 0 {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42P02", Message: fmt.Sprintf("there is no parameter $%d", h.Param)}
		}
		vals[i] = onion.Null()
		if h.Const != nil {
			if h.Increment != 0 {
				vals[i], err = p.xs[i].incrementValue(*h.Const, env)
			} else {
				vals[i], err = p.xs[i].typ.ParseText([]byte(*h.Const), env)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if err := p.gens.fillHoles(p.holes, vals, env); err != nil {
		return nil, err
	}
	violated, err := p.checks.verifyHoles(p.holes, vals, p.partialFrom, env)
	if err != nil {
		return nil, err
	}
	for r, name := range violated {
		saltNodes[r] = rewrite.CheckedSalt(saltNodes[r], rewrite.StringLiteral(name), p.table)
	}
	for i, h := range p.holes {
		c, err := p.xs[i].encryptHole(h, vals[i], salts[h.Row])
		if err != nil {
			return nil, fmt.Errorf("failed to encrypt a value of %s.%s: %w", p.xs[i].table, h.Column.Name, err)
		}
		cells[i] = literalCells(c, p.xs[i].oc)
		if h.Increment != 0 {
			cells[i][rewrite.HomModulusCell] = rewrite.NumericLiteral(p.xs[i].oc.HomModulus())
		}
	}
	if len(p.where) > 0 {
		vals := make([]*pg_query.Node, len(p.where))
		for i, h := range p.where {
			v, err := h.literalValue(env)
			var frac *fractionalConst
			if errors.As(err, &frac) {
				err = nil
			}
			if err != nil {
				return nil, err
			}
			if vals[i], err = h.cipherNode(v, frac, env); err != nil {
				return nil, err
			}
		}
		if err := rewrite.FillHoles(p.whereHoles, vals); err != nil {
			return nil, err
		}
	}
	sql, err := p.render(cells, saltNodes)
	if err != nil {
		return nil, err
	}
	return &stmtPlan{sql: sql}, nil
}

// literalCells are the SQL literals of the encrypted cells of column oc.
func literalCells(c onion.Cells, oc *onion.Column) rewrite.Cells {
	out := rewrite.Cells{}
	if c.Eq != nil {
		out["_eq"] = rewrite.CellLiteral(c.Eq, oc.CellSQLType(onion.KindEq))
	}
	if c.Ord != nil {
		out["_ord"] = rewrite.CellLiteral(c.Ord, oc.CellSQLType(onion.KindOrd))
	}
	if c.Add != nil {
		out["_add"] = rewrite.ByteaLiteral(c.Add)
	}
	if c.Search != nil {
		out["_srch"] = rewrite.Int8ArrayLiteral(c.Search)
	}
	if c.Val != nil {
		out["_val"] = rewrite.ByteaLiteral(c.Val)
	}
	return out
}

// paramSlot is a parameter the proxy adds to a statement: a cell of one
// hole (suffix), or a row's salt (hole < 0).
type paramSlot struct {
	hole   int
	row    int
	suffix string
	where  int  // 1-based WHERE comparison hole, 0 for none
	mark   bool // the catalog change recording first increments (text)
	// violated is set for the text naming the check row violates, or
	// NULL (pgonion.check_row).
	violated bool
}

// holeParams assigns the parameters of encrypted values in the extended
// protocol. The client's own parameters keep their numbers 1..n; each
// cell of each hole and each salt gets a parameter after them.
type holeParams struct {
	n       int         // the client's parameters
	slots   []paramSlot // parameters n+1, n+2, ...
	oids    []uint32    // server types of all parameters
	clients []uint32    // the client's declared types, padded to n
	// only[i] is set for client parameter i+1 when it feeds only
	// encrypted values: the server never sees its value (it is sent as
	// NULL), and its type is shown as the column's.
	only []*encrypted
}

func newHoleParams(clientOIDs []uint32, clientRefs []int) *holeParams {
	n := len(clientOIDs)
	for _, r := range clientRefs {
		n = max(n, r)
	}
	hp := &holeParams{n: n, clients: make([]uint32, n), only: make([]*encrypted, n)}
	copy(hp.clients, clientOIDs)
	return hp
}

// add returns the node of a new parameter.
func (hp *holeParams) add(slot paramSlot, oid uint32) *pg_query.Node {
	hp.slots = append(hp.slots, slot)
	hp.oids = append(hp.oids, oid)
	return rewrite.ParamNode(hp.n + len(hp.slots))
}

// finish checks how the client's parameters are used in the server's SQL
// and computes the server's parameter types. holeOf maps client
// parameters used by holes to their column.
func (hp *holeParams) finish(serverSQL string, holeOf map[int]*encrypted) ([]uint32, error) {
	stmts, err := rewrite.Parse(serverSQL)
	if err != nil || len(stmts) != 1 {
		return nil, fmt.Errorf("engine: re-parsing the rewritten statement: %v", err)
	}
	used := map[int]bool{}
	for _, r := range rewrite.ParamRefs(stmts[0]) {
		if r <= hp.n {
			used[r] = true
		}
	}
	oids := make([]uint32, hp.n, hp.n+len(hp.oids))
	copy(oids, hp.clients)
	for p, x := range holeOf {
		if used[p] {
			// The server would see the value the proxy encrypts.
			return nil, rewrite.Refusal("parameter $%d is used both for encrypted column %s.%s and in another expression; pass the value twice", p, x.table, x.cat.Name)
		}
		hp.only[p-1] = x
		if oids[p-1] == 0 {
			oids[p-1] = oidText // unreferenced: the server needs some type
		}
	}
	return append(oids, hp.oids...), nil
}

// describe shows the client its own parameters with the plaintext types.
func (hp *holeParams) describe(server []uint32) []uint32 {
	out := make([]uint32, hp.n)
	copy(out, server)
	for i, x := range hp.only {
		if x != nil {
			out[i] = hp.clients[i]
			if out[i] == 0 {
				out[i] = x.typ.OID()
			}
		}
	}
	return out
}

// bindState decodes and checks the client's parameters of one Bind.
type bindState struct {
	hp      *holeParams
	b       *pgproto3.Bind
	formats []int16
	env     onion.Env
}

func (hp *holeParams) startBind(b *pgproto3.Bind, stmtName string, params *sessionParams) (*bindState, error) {
	if len(b.Parameters) != hp.n {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "08P01",
			Message: fmt.Sprintf("bind message supplies %d parameters, but prepared statement %q requires %d", len(b.Parameters), stmtName, hp.n)}
	}
	if nf := len(b.ParameterFormatCodes); nf > 1 && nf != hp.n {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "08P01",
			Message: fmt.Sprintf("bind message has %d parameter formats but %d parameters", nf, hp.n)}
	}
	env, err := params.get()
	if err != nil {
		return nil, err
	}
	formats := make([]int16, hp.n, hp.n+len(hp.slots))
	for i := range formats {
		formats[i] = formatOf(b.ParameterFormatCodes, i)
	}
	return &bindState{hp: hp, b: b, formats: formats, env: env}, nil
}

// value reads client parameter p (1-based) for encrypted column x.
func (bs *bindState) value(p int, x *encrypted) (onion.Value, error) {
	return decodeParam(x, bs.hp.clients[p-1], bs.formats[p-1], bs.b.Parameters[p-1], bs.env)
}

// comparand is parameter p as the value compared with encrypted column
// x in a WHERE hole. A double precision parameter compared with a
// smallint or integer column compares as double precision on the
// server, which holds those integers exactly: its shortest decimal is
// compared instead (a *fractionalConst between two integers).
func (bs *bindState) comparand(p int, x *encrypted) (onion.Value, error) {
	declared, raw := bs.hp.clients[p-1], bs.b.Parameters[p-1]
	if (declared != oidFloat8 && declared != oidFloat4) || raw == nil || (x.typ.Base != onion.SmallInt && x.typ.Base != onion.Integer) {
		return bs.value(p, x)
	}
	var f float64
	switch {
	case bs.formats[p-1] == 0:
		v, err := strconv.ParseFloat(strings.TrimSpace(string(raw)), 64)
		if err != nil {
			return bs.value(p, x)
		}
		f = v
	case declared == oidFloat8 && len(raw) == 8:
		f = math.Float64frombits(binary.BigEndian.Uint64(raw))
	case declared == oidFloat4 && len(raw) == 4:
		f = float64(math.Float32frombits(binary.BigEndian.Uint32(raw)))
	default:
		return onion.Value{}, &pgconn.PgError{Severity: "ERROR", Code: "22P03", Message: "incorrect binary data format in bind parameter"}
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return onion.Value{}, rewrite.Refusal("comparing encrypted column %s.%s (%s) with a double precision parameter that is %v is not supported", x.table, x.cat.Name, x.typ, f)
	}
	text := strconv.FormatFloat(f, 'f', -1, 64)
	v, err := x.typ.ParseText([]byte(text), bs.env)
	if err != nil {
		return onion.Null(), &fractionalConst{text: text}
	}
	return v, nil
}

// finish appends the added parameters (vals[i] for slot i) and hides the
// values of parameters that fed only encrypted columns.
func (bs *bindState) finish(vals [][]byte) {
	params := bs.b.Parameters
	for i, x := range bs.hp.only {
		if x != nil {
			params[i] = nil
		}
	}
	for i, oid := range bs.hp.oids {
		params = append(params, vals[i])
		if oid == oidInt8Arr {
			bs.formats = append(bs.formats, 0)
		} else {
			bs.formats = append(bs.formats, 1)
		}
	}
	bs.b.Parameters, bs.b.ParameterFormatCodes = params, bs.formats
}

// cellValue is the Bind value of one cell: bytea in binary, the search
// tokens as an int8[] in text.
func cellValue(c onion.Cells, suffix string) []byte {
	switch suffix {
	case "_eq":
		return c.Eq
	case "_ord":
		return c.Ord
	case "_add":
		return c.Add
	case "_val":
		return c.Val
	case "_srch":
		if c.Search == nil {
			return nil
		}
		b := []byte{'{'}
		for i, x := range c.Search {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, x, 10)
		}
		return append(b, '}')
	}
	return nil
}

// holesParams plans a statement with holes for the extended protocol.
func (s *session) holesParams(p *holesPlan, clientRefs []int, ext *extended) (*stmtPlan, error) {
	hp := newHoleParams(ext.oids, clientRefs)
	saltNodes := make([]*pg_query.Node, p.salts)
	for r := range saltNodes {
		saltNodes[r] = hp.add(paramSlot{hole: -1, row: r}, oidBytea)
	}
	for _, r := range p.checks.checkedRows(p.holes, p.partialFrom) {
		saltNodes[r] = rewrite.CheckedSalt(saltNodes[r], hp.add(paramSlot{hole: -1, row: r, violated: true}, oidText), p.table)
	}
	cells := make([]rewrite.Cells, len(p.holes))
	holeOf := map[int]*encrypted{}
	for i, h := range p.holes {
		if h.Param > 0 {
			holeOf[h.Param] = p.xs[i] // over an expression's reading of it
		}
		if h.Expr != nil {
			// The parameters its expression reads: decoded by the
			// proxy, NULL for the server.
			// (A parameter that is also an encrypted column's value is
			// read as that column's type.)
			for _, n := range ir.ExprParams(h.Expr) {
				if holeOf[n] == nil {
					holeOf[n] = &encrypted{e: p.xs[i].e, table: p.xs[i].table, cat: p.xs[i].cat, typ: p.exprParams[n]}
				}
			}
		}
		cells[i] = rewrite.Cells{}
		if h.Const == nil && h.Param == 0 && !h.Generated && h.Expr == nil {
			continue // NULL
		}
		if h.Increment != 0 {
			cells[i][rewrite.HomModulusCell] = rewrite.NumericLiteral(p.xs[i].oc.HomModulus())
		}
		for _, pc := range p.xs[i].oc.PhysicalColumns("") {
			if h.Increment != 0 && pc.Suffix != "_add" {
				continue
			}
			oid := cellOID(pc.SQLType)
			if pc.Suffix == "_srch" {
				oid = oidInt8Arr
			}
			cells[i][pc.Suffix] = hp.add(paramSlot{hole: i, row: h.Row, suffix: pc.Suffix}, oid)
		}
	}
	if len(p.marks) > 0 {
		p.guard(hp.add(paramSlot{hole: -1, mark: true}, oidText))
	}
	if len(p.where) > 0 {
		vals := make([]*pg_query.Node, len(p.where))
		for i, h := range p.where {
			vals[i] = hp.add(paramSlot{hole: -1, where: i + 1}, h.oid())
			if h.Param > 0 {
				if x := holeOf[h.Param]; x != nil {
					return nil, rewrite.Refusal("parameter $%d is both a value of encrypted column %s.%s and compared with %s.%s; pass the value twice", h.Param, x.table, x.cat.Name, h.x.table, h.x.cat.Name)
				}
				if err := h.checkDeclared(hp.clients[h.Param-1]); err != nil {
					return nil, err
				}
				holeOf[h.Param] = h.paramType(hp.clients[h.Param-1])
			}
		}
		if err := rewrite.FillHoles(p.whereHoles, vals); err != nil {
			return nil, err
		}
	}
	sql, err := p.render(cells, saltNodes)
	if err != nil {
		return nil, err
	}
	if ext.serverOIDs, err = hp.finish(sql, holeOf); err != nil {
		return nil, err
	}
	ext.describe = hp.describe
	ext.bind = func(b *pgproto3.Bind) error {
		if err := s.e.checkIncremented(p.needs, nil); err != nil {
			return err
		}
		bs, err := hp.startBind(b, b.PreparedStatement, &s.params)
		if err != nil {
			return err
		}
		if len(p.holes) > 0 {
			if err := s.holdWrites(p.table); err != nil {
				return err
			}
		}
		salts := make([][]byte, p.salts)
		for r := range salts {
			salts[r] = rnd.NewSalt()
		}
		enc := make([]onion.Cells, len(p.holes))
		plain := make([]onion.Value, len(p.holes))
		var clock *exec.ServerClock // this execution's
		for i, h := range p.holes {
			plain[i] = onion.Null()
			switch {
			case h.Expr != nil:
				if clock == nil {
					clock = s.sessionClock(true)
				}
				if refs := ir.ExprParams(h.Expr); len(refs) > 0 {
					// This execution's parameters, as constants.
					vals := map[int]ir.ParamConst{}
					for _, n := range refs {
						x := holeOf[n]
						pc := ir.ParamConst{Type: x.typ.String()}
						v, err := bs.value(n, x)
						if err != nil {
							return err
						}
						if !v.IsNull() {
							text := string(x.typ.AppendText(nil, v, bs.env))
							pc.Text = &text
						}
						vals[n] = pc
					}
					h.Expr = rewrite.BindExpr(h.Expr, vals, nil)
				}
				if plain[i], err = exprHole(p.table, &h, bs.env, clock); err != nil {
					return err
				}
			case h.Param > 0:
				if plain[i], err = bs.value(h.Param, p.xs[i]); err != nil {
					return err
				}
			case h.Const != nil && h.Increment != 0:
				if plain[i], err = p.xs[i].incrementValue(*h.Const, bs.env); err != nil {
					return err
				}
			case h.Const != nil:
				if plain[i], err = p.xs[i].typ.ParseText([]byte(*h.Const), bs.env); err != nil {
					return err
				}
			}
		}
		if err := p.gens.fillHoles(p.holes, plain, bs.env); err != nil {
			return err
		}
		violated, err := p.checks.verifyHoles(p.holes, plain, p.partialFrom, bs.env)
		if err != nil {
			return err
		}
		for i, h := range p.holes {
			if enc[i], err = p.xs[i].encryptHole(h, plain[i], salts[h.Row]); err != nil {
				return fmt.Errorf("failed to encrypt a value of %s.%s: %w", p.xs[i].table, h.Column.Name, err)
			}
		}
		vals := make([][]byte, len(hp.slots))
		for i, sl := range hp.slots {
			if sl.mark {
				change, err := s.markIncrements(p.table, p.marks)
				if err != nil {
					return err
				}
				vals[i] = []byte(change)
			} else if sl.where > 0 {
				h := p.where[sl.where-1]
				v := onion.Null()
				var err error
				if h.Param > 0 {
					v, err = bs.comparand(h.Param, h.paramType(bs.hp.clients[h.Param-1]))
				} else {
					v, err = h.literalValue(bs.env)
				}
				var frac *fractionalConst
				if errors.As(err, &frac) {
					err = nil
				}
				if err != nil {
					return err
				}
				if vals[i], err = h.cipherParam(v, frac, bs.env); err != nil {
					return err
				}
			} else if sl.violated {
				if name, ok := violated[sl.row]; ok {
					vals[i] = []byte(name)
				}
			} else if sl.hole < 0 {
				vals[i] = salts[sl.row]
			} else {
				vals[i] = cellValue(enc[sl.hole], sl.suffix)
			}
		}
		bs.finish(vals)
		return nil
	}
	return &stmtPlan{sql: sql}, nil
}

// constantHoles computes the constant expressions of holes (Hole.Expr:
// lower('X'), 40 + 2, now()) as they would be on the server, and gives
// the holes their values' text: from then on they are constants. In the
// extended protocol (ext set) an expression whose value changes from one
// execution to the next (now(), gen_random_uuid()) or that reads the
// client's parameters (lower($1)) is left for each Bind (exprHole); the
// others are computed once. It returns the types of the parameters such
// expressions read (declared by the client, else as their use types
// them; text when nothing does).
func (s *session) constantHoles(t *catalog.Table, holes []rewrite.Hole, ext *extended) (map[int]onion.Type, error) {
	var clock *exec.ServerClock
	var params map[int]onion.Type
	for i := range holes {
		h := &holes[i]
		if h.Expr == nil {
			continue
		}
		env, err := s.params.get()
		if err != nil {
			return nil, err
		}
		if refs := ir.ExprParams(h.Expr); len(refs) > 0 {
			if ext == nil {
				return nil, &pgconn.PgError{Severity: "ERROR", Code: "42P02", Message: fmt.Sprintf("there is no parameter $%d", refs[0])}
			}
			declared := map[int]ir.ParamConst{}
			for _, n := range refs {
				var oid uint32
				if n-1 < len(ext.oids) {
					oid = ext.oids[n-1]
				}
				declared[n] = ir.ParamConst{Type: paramConstType(oid)}
			}
			trace := map[*ir.Expr]int{}
			typed := *h
			typed.Expr = rewrite.BindExpr(h.Expr, declared, trace)
			if _, err := planExprHole(t, &typed, env); err != nil {
				return nil, err
			}
			inferred := exec.InferTypes(func(f func(*ir.Expr)) { ir.WalkExpr(typed.Expr, f) }, trace, nil, env)
			if params == nil {
				params = map[int]onion.Type{}
			}
			for _, n := range refs {
				var pt onion.Type
				ok := false
				if n-1 < len(ext.oids) && ext.oids[n-1] != 0 {
					pt, ok = exec.TypeOfOID(ext.oids[n-1])
				}
				if !ok {
					if pt, ok = inferred[n]; !ok {
						pt = exec.TypeText
					}
				}
				if prev, ok := params[n]; ok && prev != pt {
					return nil, rewrite.Refusal("parameter $%d is read as %s and as %s in the values of table %s; cast it", n, prev, pt, t.Name)
				}
				params[n] = pt
			}
			continue
		}
		if ext != nil && exec.VolatileExpr(h.Expr) {
			if _, err := planExprHole(t, h, env); err != nil {
				return nil, err
			}
			continue
		}
		if clock == nil {
			clock = s.sessionClock(s.aheadOK)
		}
		v, err := exprHole(t, h, env, clock)
		if err != nil {
			return nil, err
		}
		h.Expr = nil
		if !v.IsNull() {
			typ, _ := rewrite.ColumnType(h.Column)
			text := string(typ.AppendText(nil, v, env))
			h.Const = &text
		}
	}
	return params, nil
}

// planExprHole types hole h's expression, refusing what the proxy
// cannot compute.
func planExprHole(t *catalog.Table, h *rewrite.Hole, env onion.Env) (*exec.Evaluator, error) {
	ev := exec.NewEvaluator(nil, env)
	if bad := ev.Plan(h.Expr); bad != nil {
		return nil, rewrite.Refusal("expression for encrypted column %s.%s: %s", t.Name, h.Column.Name, errMessage(bad))
	}
	return ev, nil
}

// exprHole computes hole h's expression (Hole.Expr) as a value of its
// column, with the server's times from clock.
func exprHole(t *catalog.Table, h *rewrite.Hole, env onion.Env, clock *exec.ServerClock) (onion.Value, error) {
	typ, err := rewrite.ColumnType(h.Column)
	if err != nil {
		return onion.Value{}, err
	}
	ev, err := planExprHole(t, h, env)
	if err != nil {
		return onion.Value{}, err
	}
	ev.Clock = clock
	a, err := ev.Eval(h.Expr, &exec.Scope{})
	if err != nil {
		return onion.Value{}, err
	}
	return assignValue(a, typ, env)
}
