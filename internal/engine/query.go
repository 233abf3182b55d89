package engine

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgarray"
	"github.com/pgonion/pgonion/internal/pglike"
	"github.com/pgonion/pgonion/internal/pglocale"
	"github.com/pgonion/pgonion/internal/pgnumeric"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// planQuery rewrites a SELECT over tables with encrypted columns
// (rewrite.PlanQuery), peels the onions it needs first, and arranges for
// its comparison values to be encrypted and its rows decrypted.
func (s *session) planQuery(st rewrite.Statement, tables map[string]*catalog.Table, ext *extended) (*stmtPlan, error) {
	clientRefs := rewrite.ParamRefs(st)
	lookup := func(schema, name string) *catalog.Table { return tables[schema+"."+name] }
	rewrite.DropSubqueryOrder(st)
	sel, err := rewrite.PlanSelect(st, lookup, rewrite.SelectOptions{})
	var rk *rewrite.RekeyError
	if errors.As(err, &rk) {
		// Evaluating subqueries first reveals less than re-keying
		// columns into one join group: prefer it where it runs.
		if ext == nil && s.aheadOK && s.exec != nil {
			if ahead, ok := s.subqueriesAhead(st, lookup, ext, rk.Refusal()); ok {
				return ahead()
			}
		}
		if !s.splitNotRekey {
			return nil, err
		}
		// The proxy compares the columns (split execution).
		sel, err = rewrite.PlanSelect(st, lookup, rewrite.SelectOptions{SplitOverRekey: true})
	}
	if err != nil {
		refusal := err
		var se *rewrite.SplitError
		if errors.As(err, &se) {
			refusal = se.Refusal
		}
		if ahead, ok := s.subqueriesAhead(st, lookup, ext, refusal); ok {
			return ahead()
		}
		return nil, err
	}
	p, agg := sel.Server, sel.Proxy
	if err := s.e.checkTextOrder(p); err != nil {
		return nil, err
	}
	if err := s.ensureLayers(p.Needs); err != nil {
		return nil, err
	}
	s.e.buildOnions(p.Wants)
	holes := make([]*cmpHole, len(p.Holes))
	for i, h := range p.Holes {
		x, err := s.e.encrypted(h.Table.Name, h.Column)
		if err != nil {
			return nil, err
		}
		holes[i] = &cmpHole{CmpHole: h, x: x}
	}
	var proj *projection
	if !p.PlainResults {
		if proj, err = s.e.queryProjection(p); err != nil {
			return nil, err
		}
	}
	sp := &stmtPlan{split: agg}
	if agg == nil {
		sp.proj = proj
	}
	if ext == nil {
		env, err := s.params.get()
		if err != nil {
			return nil, err
		}
		vals := make([]*pg_query.Node, len(holes))
		plain := make([]onion.Value, len(holes))
		for i, h := range holes {
			v, err := h.literalValue(env)
			var frac *fractionalConst
			if errors.As(err, &frac) {
				err = nil
			}
			if err != nil {
				return nil, err
			}
			plain[i] = v
			if vals[i], err = h.cipherNode(v, frac, env); err != nil {
				return nil, err
			}
		}
		if sp.sql, err = p.Render(vals); err != nil {
			return nil, err
		}
		var d *decrypter
		if proj != nil {
			ex, err := proj.execFor(p, nil, env, plain)
			if err != nil {
				return nil, err
			}
			d = &decrypter{p: proj, params: &s.params}
			d.ex.Store(ex)
			sp.results = d
		}
		if agg != nil {
			a := newAggregator(agg, d, aggInputs(agg, proj), newAggTypes(agg), &s.params, nil, s.e.cat.collation)
			s.readClock(a, s.aheadOK)
			sp.results = a
		}
		return sp, nil
	}
	var current atomic.Pointer[decrypter]
	hp := newHoleParams(ext.oids, clientRefs)
	vals := make([]*pg_query.Node, len(holes))
	holeOf := map[int]*encrypted{}
	for i, h := range holes {
		vals[i] = hp.add(paramSlot{hole: i}, h.oid())
		if h.Param > 0 {
			if err := h.checkDeclared(hp.clients[h.Param-1]); err != nil {
				return nil, err
			}
			holeOf[h.Param] = h.paramType(hp.clients[h.Param-1])
		}
	}
	for _, r := range p.Residuals {
		if r.Like != nil && r.Like.Param > 0 {
			holeOf[r.Like.Param] = textParam
		}
	}
	for _, lv := range []ir.LimitValue{p.Limit, p.Offset} {
		if lv.Param > 0 {
			holeOf[lv.Param] = int8Param
		}
	}
	// Parameters that split execution's expressions read: the server
	// gets NULL in their place.
	var aggParams []int
	declared := map[int]ir.ParamConst{}
	if agg != nil {
		aggParams = agg.Params()
		for _, n := range aggParams {
			if holeOf[n] != nil || n > hp.n {
				return nil, rewrite.Refusal("parameter $%d is used both in an expression the proxy computes and elsewhere; pass the value twice", n)
			}
			declared[n] = ir.ParamConst{Type: paramConstType(hp.clients[n-1])}
		}
		env, err := s.params.get()
		if err != nil {
			return nil, err
		}
		inferred := exec.InferParamTypes(agg, encTypes(aggInputs(agg, proj)), declared, env)
		for _, n := range agg.LimitParams() {
			inferred[n] = exec.TypeInt8 // LIMIT and OFFSET are bigint
		}
		for _, n := range aggParams {
			holeOf[n] = exprParam(n, hp.clients[n-1], inferred[n])
		}
	}
	var box atomic.Pointer[paramBox]
	if sp.sql, err = p.Render(vals); err != nil {
		return nil, err
	}
	if ext.serverOIDs, err = hp.finish(sp.sql, holeOf); err != nil {
		return nil, err
	}
	ext.describe = hp.describe
	ext.bind = func(b *pgproto3.Bind) error {
		if err := s.e.checkIncremented(p.Needs, proj); err != nil {
			return err
		}
		bs, err := hp.startBind(b, b.PreparedStatement, &s.params)
		if err != nil {
			return err
		}
		cells := make([][]byte, len(holes))
		plain := make([]onion.Value, len(holes))
		for i, h := range holes {
			v := onion.Null()
			switch {
			case h.Param > 0:
				v, err = bs.comparand(h.Param, h.paramType(bs.hp.clients[h.Param-1]))
			default:
				v, err = h.literalValue(bs.env)
			}
			var frac *fractionalConst
			if errors.As(err, &frac) {
				err = nil
			}
			if err != nil {
				return err
			}
			plain[i] = v
			if cells[i], err = h.cipherParam(v, frac, bs.env); err != nil {
				return err
			}
		}
		if len(aggParams) > 0 {
			// Read before finish hides the client's parameters.
			vals := map[int]ir.ParamConst{}
			for _, n := range aggParams {
				pc := declared[n]
				if raw := b.Parameters[n-1]; raw != nil {
					x := holeOf[n]
					v, err := decodeParam(x, hp.clients[n-1], bs.formats[n-1], raw, bs.env)
					if err != nil {
						return err
					}
					text := string(x.typ.AppendText(nil, v, bs.env))
					pc.Text = &text
				}
				vals[n] = pc
			}
			if pb := box.Load(); pb != nil {
				pb.vals.Store(&vals)
			}
		}
		if proj != nil {
			// Read before finish replaces the client's parameters.
			ex, err := proj.execFor(p, bs, bs.env, plain)
			if err != nil {
				return err
			}
			// Results (called for this Bind just before) made the
			// portal's decrypter.
			if d := current.Load(); d != nil {
				d.ex.Store(ex)
			}
		}
		bs.finish(cells)
		return nil
	}
	if agg != nil {
		inEnc := aggInputs(agg, proj)
		types := newAggTypes(agg)
		ext.resultFmts = func(client []int16) ([]int16, error) {
			if len(client) > 1 && len(client) != len(agg.Outputs) {
				return nil, &pgconn.PgError{Severity: "ERROR", Code: "08P01",
					Message: fmt.Sprintf("bind message has %d result formats but query has %d columns", len(client), len(agg.Outputs))}
			}
			if proj != nil {
				return proj.serverFormats(nil) // the inputs: plain ones as text
			}
			return nil, nil // all text
		}
		ext.results = func(formats []int16) wire.ResultRewriter {
			var d *decrypter
			if proj != nil {
				d = &decrypter{p: proj, params: &s.params, serverBinary: true}
				current.Store(d)
			}
			a := newAggregator(agg, d, inEnc, types, &s.params, formats, s.e.cat.collation)
			s.readClock(a, true) // at Bind (a Describe's is never run)
			if len(aggParams) > 0 {
				a.bound = &paramBox{declared: declared}
				box.Store(a.bound)
			}
			return a
		}
		return sp, nil
	}
	if proj != nil {
		ext.resultFmts = proj.serverFormats
		ext.results = func(formats []int16) wire.ResultRewriter {
			// formats == nil: Describe of the statement, rows never follow.
			d := &decrypter{p: proj, params: &s.params, formats: formats, serverBinary: true}
			current.Store(d)
			return d
		}
	}
	return sp, nil
}

// isRefusal reports whether err is a refusal (0A000).
func isRefusal(err error) bool { return rewrite.IsRefusal(err) }

// aggInputs are the encrypted columns among a split execution's inputs
// (nil for a plain input).
func aggInputs(agg *rewrite.AggPlan, proj *projection) []*encrypted {
	for agg.Source != nil {
		agg = agg.Source // the server's rows are the innermost plan's inputs
	}
	in := make([]*encrypted, agg.Inputs)
	if proj != nil {
		for i := range in {
			in[i] = proj.cols[i].x
		}
	}
	return in
}

// checkTextOrder refuses a plan that orders encrypted text (a range or
// ORDER BY) when the database's collation is not byte order
// (pglocale.ByteOrder): the proxy compares text values byte by byte.
func (e *Engine) checkTextOrder(p *rewrite.QueryPlan) error {
	coll := e.cat.collation
	if pglocale.ByteOrder(coll) {
		return nil
	}
	what := ""
	switch {
	case p.Sort != nil:
		what = "ORDER BY on an encrypted text column"
	default:
		for _, r := range p.Residuals {
			if r.Compare != nil {
				what = fmt.Sprintf("a range comparison on encrypted text column %s.%s", p.Holes[r.Compare.Hole].Table.Name, p.Holes[r.Compare.Hole].Column.Name)
			}
		}
	}
	if what == "" {
		return nil
	}
	return rewrite.Refusal("%s is not supported: the database's collation is %q, and the proxy orders encrypted text only as the C, POSIX and C.UTF-8 collations do (create the database with LC_COLLATE 'C')", what, coll)
}

// Pseudo-columns that type the parameters the proxy reads itself: a LIKE
// pattern (text) and a LIMIT or OFFSET (bigint).
var (
	textParam = &encrypted{table: "", cat: &catalog.Column{Name: "LIKE pattern"}, typ: onion.Type{Base: onion.Text}}
	int8Param = &encrypted{table: "", cat: &catalog.Column{Name: "LIMIT"}, typ: onion.Type{Base: onion.BigInt}}
)

// exprParam describes client parameter n read by an expression the
// proxy computes: of the type the client declared, else of the type its
// use gives it (inferred; text when none), read as an untyped literal.
func exprParam(n int, declared uint32, inferred onion.Type) *encrypted {
	t, ok := exec.TypeOfOID(declared)
	if !ok || paramConstType(declared) == "" {
		t = exec.TypeText
		if declared == 0 && inferred.Base != onion.Invalid {
			t = inferred
		}
	}
	return &encrypted{cat: &catalog.Column{Name: fmt.Sprintf("$%d", n)}, typ: t}
}

// paramConstType names a declared parameter type as a constant's type
// (ir.Expr.ConstType); "" for none or one the evaluator reads
// otherwise (an untyped literal).
func paramConstType(oid uint32) string { return paramConstTypes[oid] }

// paramConstTypes is read at every Bind: built once.
var paramConstTypes = map[uint32]string{oidInt2: "smallint", oidInt4: "integer", oidInt8: "bigint", 1700: "numeric", oidText: "text",
	oidVarchar: "varchar", 16: "boolean", 1082: "date", 701: "float8", 1083: "time", 1114: "timestamp", 1184: "timestamptz",
	1186: "interval", oidTextArr: "text[]", 869: "inet", 650: "cidr", 2950: "uuid", 3802: "jsonb", 17: "bytea"}

// cmpHole is a comparison value of a query with its column.
type cmpHole struct {
	rewrite.CmpHole
	x *encrypted
}

// paramType is the column as seen by a parameter compared with it: of the
// column's comparison type (a varchar(5) column compares with any text),
// or text for a LIKE pattern. declared is the type the client declared
// for the parameter (0 for none).
func (h *cmpHole) paramType(declared uint32) *encrypted {
	if h.Kind == rewrite.HoleTokens {
		return textParam
	}
	if h.Kind == rewrite.HoleDETArray {
		x := h.element(nil).paramType(0)
		at, err := onion.ArrayOf(x.typ)
		if err != nil {
			return textParam // not reached: every comparison type has arrays
		}
		x.typ = at
		return x
	}
	t := h.x.typ.ComparisonType()
	cast := h.ConstType
	if cast == "" {
		cast = paramConstType(declared)
	}
	if _, integer := widerInteger(cast); h.x.typ.Base == onion.Float4 && !isFloat8Name(cast) && !integer {
		// An untyped parameter compared with a real is a real (float4eq);
		// $1::float8 and an integer compare as double precision.
		t = h.x.typ
	}
	if w, ok := widerInteger(cast); ok && isInteger(t) && w.Base != t.Base {
		// $1::int8 against an int4 column: the client sends an int8,
		// which may lie outside the column's range (it then equals no
		// value, and is beyond every value).
		t = w
	}
	return &encrypted{e: h.x.e, table: h.x.table, cat: h.x.cat, oc: h.x.oc, typ: t}
}

// checkDeclared fails as PostgreSQL does where the client declared an
// integer parameter compared with a column that is not a number (WHERE
// flag = $1 with $1 an int4).
func (h *cmpHole) checkDeclared(declared uint32) error {
	switch declared {
	case oidInt2, oidInt4, oidInt8:
	default:
		return nil
	}
	if h.ConstType != "" || h.Kind == rewrite.HoleTokens || h.Kind == rewrite.HoleDETArray {
		return nil
	}
	t := h.x.typ.ComparisonType()
	if baseFamily(t.Base) == "number" {
		return nil
	}
	return &pgconn.PgError{Severity: "ERROR", Code: "42883",
		Message: fmt.Sprintf("operator does not exist: %s %s %s", t.BaseName(), h.Op, typeDisplayName(paramConstType(declared))),
		Hint:    "No operator matches the given name and argument types. You might need to add explicit type casts."}
}

// isFloat8Name reports whether a cast names double precision.
func isFloat8Name(name string) bool {
	switch name {
	case "float8", "double precision", "float":
		return true
	}
	return false
}

// widerInteger is the integer type a parameter cast names.
func widerInteger(name string) (onion.Type, bool) {
	switch name {
	case "int8", "bigint":
		return onion.Type{Base: onion.BigInt}, true
	case "int4", "integer", "int":
		return onion.Type{Base: onion.Integer}, true
	case "int2", "smallint":
		return onion.Type{Base: onion.SmallInt}, true
	}
	return onion.Type{}, false
}

// literalValue reads the hole's constant (NULL when it has none).
func (h *cmpHole) literalValue(env onion.Env) (onion.Value, error) {
	if h.Param > 0 {
		return onion.Value{}, &pgconn.PgError{Severity: "ERROR", Code: "42P02", Message: fmt.Sprintf("there is no parameter $%d", h.Param)}
	}
	if h.Const == nil || h.Kind == rewrite.HoleDETArray {
		return onion.Null(), nil // an array constant is read by arrayCells
	}
	if h.Kind == rewrite.HoleTokens {
		return onion.Type{Base: onion.Text}.ParseText([]byte(*h.Const), env)
	}
	t := h.x.typ.ComparisonType()
	if h.ConstType == "" {
		// A quoted literal is read as the column's type, errors included
		// (WHERE i = '1.5' fails in PostgreSQL); a real's as a real, where
		// a numeric constant compares as double precision.
		if h.x.typ.Base == onion.Float4 {
			t = h.x.typ
		}
		return t.ParseText([]byte(*h.Const), env)
	}
	if h.x.typ.Base == onion.Float4 && (h.ConstType == "float4" || h.ConstType == "real") {
		t = h.x.typ // 0.1::real is rounded to a real first
	}
	fam, col := typeFamily(h.ConstType), baseFamily(t.Base)
	if fam != col {
		return onion.Value{}, &pgconn.PgError{Severity: "ERROR", Code: "42883",
			Message: fmt.Sprintf("operator does not exist: %s %s %s", t.BaseName(), h.Op, typeDisplayName(h.ConstType)),
			Hint:    "No operator matches the given name and argument types. You might need to add explicit type casts."}
	}
	if t.Base == onion.Date && (h.ConstType == "timestamp" || h.ConstType == "timestamptz") {
		return h.dateBound(env)
	}
	v, err := t.ParseText([]byte(*h.Const), env)
	if err != nil && isInteger(t) && looksNumeric(*h.Const) {
		// c = 1.5 on an integer column compares as numeric: handled by
		// cipher (never equal; ranges round).
		return onion.Null(), &fractionalConst{text: *h.Const}
	}
	return v, err
}

// dateBound reads a timestamp constant compared with a date column:
// PostgreSQL compares the date at midnight with it, so a time of day
// other than midnight falls between two dates.
func (h *cmpHole) dateBound(env onion.Env) (onion.Value, error) {
	if h.ConstType == "timestamptz" {
		return onion.Value{}, rewrite.Refusal("comparing encrypted date column %s.%s with a timestamp with time zone is not supported: cast the constant to date or timestamp", h.x.table, h.x.cat.Name)
	}
	ts, err := onion.Type{Base: onion.Timestamp}.ParseText([]byte(*h.Const), env)
	if err != nil {
		return ts, err
	}
	const usecsPerDay = 86400 * 1000000
	us := ts.Int64()
	switch us {
	case math.MaxInt64:
		return onion.DateValue(math.MaxInt32), nil // infinity
	case math.MinInt64:
		return onion.DateValue(math.MinInt32), nil
	}
	days := us / usecsPerDay
	if us%usecsPerDay < 0 {
		days--
	}
	if us-days*usecsPerDay == 0 {
		return onion.DateValue(int32(days)), nil
	}
	return onion.Null(), &fractionalConst{days: days}
}

// typeFamily groups PostgreSQL type names by what they compare with
// without a cast.
func typeFamily(name string) string {
	switch name {
	case "integer", "bigint", "numeric", "int2", "int4", "int8", "smallint", "int", "decimal", "float4", "float8", "real":
		return "number"
	case "text", "varchar", "bpchar", "char", "name":
		return "text"
	case "date", "timestamp", "timestamptz":
		return "datetime"
	case "boolean", "bool":
		return "boolean"
	case "bytea":
		return "bytea"
	case "cidr":
		return "inet"
	}
	return name
}

func baseFamily(b onion.Base) string {
	switch b {
	case onion.Array:
		return "array"
	case onion.SmallInt, onion.Integer, onion.BigInt, onion.Numeric, onion.Float8, onion.Float4:
		return "number"
	case onion.UUID:
		return "uuid"
	case onion.Time:
		return "time"
	case onion.Inet, onion.Cidr:
		return "inet"
	case onion.Interval:
		return "interval"
	case onion.JSONB:
		return "jsonb"
	case onion.Text, onion.Varchar, onion.Char:
		return "text"
	case onion.Date, onion.Timestamp, onion.Timestamptz:
		return "datetime"
	case onion.Boolean:
		return "boolean"
	}
	return "bytea"
}

// typeDisplayName is how PostgreSQL's messages name a type.
func typeDisplayName(name string) string {
	switch name {
	case "int2":
		return "smallint"
	case "int4", "int":
		return "integer"
	case "int8":
		return "bigint"
	case "float8":
		return "double precision"
	case "float4":
		return "real"
	case "varchar":
		return "character varying"
	case "bpchar", "char":
		return "character"
	case "bool":
		return "boolean"
	case "timestamp":
		return "timestamp without time zone"
	case "timestamptz":
		return "timestamp with time zone"
	}
	return name
}

// fractionalConst is a constant between two values of the column's
// domain: a numeric constant compared with an integer column (text), or
// a timestamp with a time of day compared with a date column (after the
// date days).
type fractionalConst struct {
	text string
	days int64
}

func (f *fractionalConst) Error() string { return "fractional constant " + f.text }

func isInteger(t onion.Type) bool {
	return t.Base == onion.SmallInt || t.Base == onion.Integer || t.Base == onion.BigInt
}

func looksNumeric(s string) bool {
	_, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	return ok
}

// Sentinels for comparison values outside a column's domain: no DET or
// OPE ciphertext is empty, and none is longer than 16 bytes, so ” sorts
// below every OPE ciphertext and equals none, and 17 bytes of 0xff sort
// above every OPE ciphertext.
var (
	sentinelLow  = []byte{}
	sentinelHigh = bytes.Repeat([]byte{0xff}, 17)
	uuidLow      = make([]byte, 16)
	uuidHigh     = bytes.Repeat([]byte{0xff}, 16)
)

// cipher returns the hole's ciphertext for value v (nil for NULL), as
// bytes (DET, OPE) or tokens (search).
func (h *cmpHole) cipher(v onion.Value, frac *fractionalConst) ([]byte, []int64, error) {
	oc := h.x.oc
	if frac != nil {
		return h.fractional(frac)
	}
	if v.IsNull() {
		return nil, nil, nil
	}
	switch h.Kind {
	case rewrite.HoleDET:
		ct, err := oc.EqDET(v)
		if err != nil {
			return nil, nil, fmt.Errorf("failed to encrypt a comparison value for %s.%s: %w", h.x.table, h.x.cat.Name, err)
		}
		return ct, nil, nil
	case rewrite.HoleOPE:
		ct, err := oc.OrdOPE(v, rounding(h.Op))
		switch {
		case errors.Is(err, onion.ErrOrdRange):
			if negative(h.x.typ.ComparisonType(), v) {
				return sentinelLow, nil, nil
			}
			if h.x.typ.Base == onion.Numeric && h.Op != "=" && h.Op != "<>" {
				return h.aboveFinite()
			}
			return sentinelHigh, nil, nil
		case err != nil && (h.Op == "=" || h.Op == "<>"):
			return sentinelLow, nil, nil // not a value of the column: equals none
		case err != nil:
			return nil, nil, fmt.Errorf("failed to encrypt a comparison value for %s.%s: %w", h.x.table, h.x.cat.Name, err)
		}
		return ct, nil, nil
	case rewrite.HoleTokens:
		ctype := h.x.e.cat.ctype
		if h.Like.CaseInsensitive && !pglocale.IsC(ctype) {
			// The tokens fold ASCII letters only; lower() under ctype
			// maps more (and some letters into ASCII: the Kelvin sign to
			// k): no prefilter, the proxy checks every row.
			return nil, []int64{}, nil
		}
		p, err := h.Like.Compile(string(onion.Type{Base: onion.Text}.AppendText(nil, v, onion.Env{})), ctype)
		if err != nil {
			return nil, nil, err
		}
		toks, err := oc.SearchTokens(p)
		if err != nil {
			return nil, nil, err
		}
		if toks == nil {
			toks = []int64{}
		}
		return nil, toks, nil
	}
	return nil, nil, fmt.Errorf("engine: unknown hole kind %d", h.Kind)
}

// fractional handles a non-integral numeric constant compared with an
// integer column: = matches nothing, <> every non-NULL value, and ranges
// compare with the integer the bound rounds to.
func (h *cmpHole) fractional(f *fractionalConst) ([]byte, []int64, error) {
	if f.text == "" {
		return h.betweenDates(f.days)
	}
	r, _ := new(big.Rat).SetString(strings.TrimSpace(f.text))
	if h.Kind == rewrite.HoleDET || h.Op == "=" || h.Op == "<>" {
		if r.IsInt() {
			v, ok := intValue(r.Num())
			if !ok {
				return sentinelLow, nil, nil
			}
			return h.cipher(v, nil)
		}
		return sentinelLow, nil, nil
	}
	q := new(big.Int).Quo(r.Num(), r.Denom()) // truncated toward zero
	if !r.IsInt() {
		if rounding(h.Op) == onion.Floor && r.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else if rounding(h.Op) == onion.Ceil && r.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		}
	}
	v, ok := intValue(q)
	if !ok {
		if q.Sign() < 0 {
			return sentinelLow, nil, nil
		}
		return sentinelHigh, nil, nil
	}
	return h.cipher(v, nil)
}

// aboveFinite is the ciphertext for a range bound above every finite
// value of a numeric(p,s) column (1e15, 'Infinity'): NaN, which
// PostgreSQL sorts above every number, lies above it, so the bound is
// NaN's own ciphertext (for >= and <) or the largest finite value's (for >
// and <=).
func (h *cmpHole) aboveFinite() ([]byte, []int64, error) {
	t := h.x.typ
	text := "NaN"
	if h.Op == ">" || h.Op == "<=" {
		text = strings.Repeat("9", t.Precision-t.Scale)
		if t.Scale > 0 {
			text += "." + strings.Repeat("9", t.Scale)
		}
		if text == "" || text[0] == '.' {
			text = "0" + text
		}
	}
	v, err := t.ParseText([]byte(text), onion.Env{})
	if err != nil {
		return nil, nil, err
	}
	ct, err := h.x.oc.OrdOPE(v, onion.Exact)
	return ct, nil, err
}

// betweenDates is the ciphertext for a bound strictly between date days
// and the next one.
func (h *cmpHole) betweenDates(days int64) ([]byte, []int64, error) {
	if h.Kind == rewrite.HoleDET || h.Op == "=" || h.Op == "<>" {
		return sentinelLow, nil, nil // equals no date
	}
	if rounding(h.Op) == onion.Ceil {
		days++
	}
	return h.cipher(onion.DateValue(int32(days)), nil)
}

func intValue(x *big.Int) (onion.Value, bool) {
	if !x.IsInt64() {
		return onion.Value{}, false
	}
	return onion.IntValue(x.Int64()), true
}

// negative reports whether v sorts below zero (for out-of-domain bounds).
func negative(t onion.Type, v onion.Value) bool {
	text := t.AppendText(nil, v, onion.Env{})
	return len(text) > 0 && text[0] == '-'
}

// rounding is how a range bound between two domain values rounds, seen
// from the column (c < 1.5 is c < 2 on integers; c <= 1.5 is c <= 1).
func rounding(op string) onion.Rounding {
	switch op {
	case "<", ">=":
		return onion.Ceil
	case "<=", ">":
		return onion.Floor
	}
	return onion.Exact
}

// element is the scalar hole of one element of a HoleDETArray: the
// element's text (nil for a parameter's elements), read as a constant of
// the array's element type.
func (h *cmpHole) element(text *string) *cmpHole {
	e := *h
	e.Kind, e.Param, e.Const = rewrite.HoleDET, 0, text
	return &e
}

// arrayCells returns the DET ciphertexts of the elements of a
// HoleDETArray, as cells (nil for a NULL element); nil and false for a
// NULL array. v is the parameter's array value (of paramType); a
// constant is read from the hole, each element as a comparison constant
// of the array's element type is (an element equal to no value of the
// column gets a ciphertext no cell equals).
func (h *cmpHole) arrayCells(v onion.Value, env onion.Env) ([][]byte, bool, error) {
	var elems []*cmpHole
	var vals []onion.Value
	var fracs []*fractionalConst
	switch {
	case h.Param > 0:
		if v.IsNull() {
			return nil, false, nil
		}
		ev, err := h.paramType(0).typ.ArrayElements(v)
		if err != nil {
			return nil, false, err
		}
		for _, x := range ev {
			elems, vals, fracs = append(elems, h.element(nil)), append(vals, x), append(fracs, nil)
		}
	case h.Const == nil:
		return nil, false, nil
	default:
		texts, err := pgarray.ParseText(*h.Const)
		if err != nil {
			return nil, false, &pgconn.PgError{Severity: "ERROR", Code: "22P02", Message: fmt.Sprintf("malformed array literal: %q", *h.Const), Detail: err.Error()}
		}
		for _, t := range texts {
			eh := h.element(t)
			x, err := eh.literalValue(env)
			var frac *fractionalConst
			if errors.As(err, &frac) {
				err = nil
			}
			if err != nil {
				return nil, false, err
			}
			elems, vals, fracs = append(elems, eh), append(vals, x), append(fracs, frac)
		}
	}
	cells := make([][]byte, len(elems))
	for i, eh := range elems {
		b, _, err := eh.cipher(vals[i], fracs[i])
		if err != nil {
			return nil, false, err
		}
		cells[i] = eh.cell(b)
	}
	return cells, true, nil
}

// arrayText is the text form of an array of cells of type cellType.
func arrayText(cells [][]byte, cellType string) []byte {
	b := []byte{'{'}
	for i, c := range cells {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case c == nil:
			b = append(b, "NULL"...)
		case cellType == "uuid":
			b = onion.AppendUUIDText(b, c)
		default:
			b = append(b, `"\\x`...)
			b = hex.AppendEncode(b, c)
			b = append(b, '"')
		}
	}
	return append(b, '}')
}

func (h *cmpHole) cipherNode(v onion.Value, frac *fractionalConst, env onion.Env) (*pg_query.Node, error) {
	if h.Kind == rewrite.HoleDETArray {
		cells, ok, err := h.arrayCells(v, env)
		if err != nil || !ok {
			return rewrite.TypedNull(h.cellType(), true), err
		}
		return rewrite.ArrayLiteral(arrayText(cells, h.cellType()), h.cellType()), nil
	}
	b, toks, err := h.cipher(v, frac)
	if err != nil {
		return nil, err
	}
	if h.Kind == rewrite.HoleTokens {
		return rewrite.Int8ArrayLiteral(toks), nil
	}
	return rewrite.CellLiteral(h.cell(b), h.cellType()), nil
}

func (h *cmpHole) cipherParam(v onion.Value, frac *fractionalConst, env onion.Env) ([]byte, error) {
	if h.Kind == rewrite.HoleDETArray {
		cells, ok, err := h.arrayCells(v, env)
		if err != nil || !ok {
			return nil, err
		}
		return pgarray.AppendBinary(nil, cellOID(h.cellType()), cells), nil // binary, as every added cell
	}
	b, toks, err := h.cipher(v, frac)
	if err != nil {
		return nil, err
	}
	if h.Kind == rewrite.HoleTokens {
		return cellValue(onion.Cells{Search: toks}, "_srch"), nil
	}
	return h.cell(b), nil
}

// cellType is the PostgreSQL type of the cells the hole compares with
// (onion.CellSQLType; "int8[]" for search tokens).
func (h *cmpHole) cellType() string {
	switch h.Kind {
	case rewrite.HoleTokens:
		return "int8[]"
	case rewrite.HoleOPE:
		return h.x.oc.CellSQLType(onion.KindOrd)
	}
	return h.x.oc.CellSQLType(onion.KindEq)
}

// oid is the type OID of the hole's parameter.
func (h *cmpHole) oid() uint32 {
	switch {
	case h.Kind == rewrite.HoleTokens:
		return oidInt8Arr
	case h.Kind == rewrite.HoleDETArray && h.cellType() == "uuid":
		return oidUUIDArr
	case h.Kind == rewrite.HoleDETArray:
		return oidByteaArr
	}
	return cellOID(h.cellType())
}

// cell is ciphertext b as a value of the hole's cell type: the sentinels,
// which no bytea ciphertext equals, become the least and the greatest
// uuid for a uuid cell (no padded OPE cell is either; a 16-byte OPE or
// DET ciphertext is with probability 2^-64 or less: see onion.FormatUUID).
func (h *cmpHole) cell(b []byte) []byte {
	if b == nil || h.cellType() != "uuid" || len(b) == 16 {
		return b
	}
	if len(b) == 0 {
		return uuidLow
	}
	return uuidHigh
}

// queryProjection is the projection of a QueryPlan's rows.
func (e *Engine) queryProjection(p *rewrite.QueryPlan) (*projection, error) {
	var err error
	proj := &projection{salt: -1, visible: p.Visible, nServer: p.ServerColumns, origins: &e.origins}
	for _, rc := range p.Columns {
		pc := projColumn{name: rc.Name, server: rc.Server, val: rc.Val, salt: rc.Salt, rowSalt: rc.RowSalt, decode: rc.Decode, count: rc.Count, add: rc.Add}
		if rc.Column != nil {
			x, err := e.encrypted(rc.Table.Name, rc.Column)
			if err != nil {
				return nil, err
			}
			pc.x = x
		}
		proj.nServer = max(proj.nServer, pc.server+1, pc.val+1, pc.salt+1, pc.rowSalt+1, pc.count+1, pc.add+1)
		proj.cols = append(proj.cols, pc)
	}
	for _, r := range p.Residuals {
		if rc := p.Columns[r.Column]; rc.Column != nil && (r.Compare != nil || r.Like != nil && r.Like.CaseInsensitive) {
			if err := e.collationRefusal(rc.Table.Name, rc.Column); err != nil {
				return nil, err
			}
		}
		res := residual{col: r.Column, like: r.Like, cmp: r.Compare}
		if r.Like != nil && r.Like.Const != nil {
			if res.pattern, err = r.Like.Compile(*r.Like.Const, e.cat.ctype); err != nil {
				return nil, err
			}
		}
		proj.residuals = append(proj.residuals, res)
	}
	if p.Sort != nil {
		for _, k := range p.Sort.Keys {
			if k.Kind != rewrite.SortValue {
				continue // Column is a server column
			}
			if rc := p.Columns[k.Column]; rc.Column != nil {
				if err := e.collationRefusal(rc.Table.Name, rc.Column); err != nil {
					return nil, err
				}
			}
		}
		proj.sort = p.Sort
	}
	return proj, nil
}

// residual is a condition the proxy checks on a decrypted value: a LIKE,
// or a range comparison of a text column.
type residual struct {
	col     int
	like    *ir.Like
	pattern *pglike.Pattern // compiled at plan time for a constant pattern
	cmp     *rewrite.CompareCheck
}

// execFor returns the proxy-side LIMIT, OFFSET, patterns and comparison
// values of one execution (bs is nil for the simple protocol; holes are
// the plaintexts of the plan's comparison holes); nil when the proxy
// neither filters nor sorts the statement's rows.
func (p *projection) execFor(plan *rewrite.QueryPlan, bs *bindState, env onion.Env, holes []onion.Value) (*execState, error) {
	if !p.proxyRows() {
		return nil, nil
	}
	read := func(lv ir.LimitValue) (int64, error) {
		switch {
		case lv.Const != nil:
			return *lv.Const, nil
		case lv.Param > 0 && bs != nil:
			v, err := bs.value(lv.Param, int8Param)
			if err != nil || v.IsNull() {
				return -1, err
			}
			return v.Int64(), nil
		}
		return -1, nil
	}
	var err error
	ex := &execState{limit: -1}
	if ex.limit, err = read(plan.Limit); err != nil {
		return nil, err
	}
	if ex.offset, err = read(plan.Offset); err != nil {
		return nil, err
	}
	if ex.offset < 0 {
		if plan.Offset.Const != nil || plan.Offset.Param > 0 && bs != nil {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "2201X", Message: "OFFSET must not be negative"}
		}
		ex.offset = 0
	}
	if ex.limit < -1 || ex.limit < 0 && plan.Limit.Const != nil && *plan.Limit.Const < 0 {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "2201W", Message: "LIMIT must not be negative"}
	}
	ex.patterns = make([]*pglike.Pattern, len(p.residuals))
	ex.bounds = make([]onion.Value, len(p.residuals))
	for i, r := range p.residuals {
		if r.cmp != nil {
			ex.bounds[i] = holes[r.cmp.Hole]
			continue
		}
		ex.patterns[i] = r.pattern
		if r.like.Param > 0 && bs != nil {
			v, err := bs.value(r.like.Param, textParam)
			if err != nil {
				return nil, err
			}
			if v.IsNull() {
				ex.patterns[i] = nil // x LIKE NULL is NULL: no row
				continue
			}
			pat := string(onion.Type{Base: onion.Text}.AppendText(nil, v, env))
			if ex.patterns[i], err = r.like.Compile(pat, env.CType); err != nil {
				return nil, err
			}
		}
	}
	return ex, nil
}

// execState is what one execution of a statement with residual checks
// needs: its LIMIT, OFFSET and patterns.
type execState struct {
	limit, offset int64 // limit -1: none
	patterns      []*pglike.Pattern
	bounds        []onion.Value // the values Compare residuals compare with
}

// numericType is unconstrained numeric (AVG's result).
var numericType = onion.Type{Base: onion.Numeric}

// avgValue is PostgreSQL's AVG of a numeric sum over count rows: numeric
// division at select_div_scale's scale (internal/pgnumeric). sum is a
// Value of the column's SumType.
func avgValue(sumType onion.Type, sum onion.Value, count int64) (onion.Value, error) {
	if sum.IsNull() || count == 0 {
		return onion.Null(), nil
	}
	d, err := pgnumeric.Parse(string(sumType.AppendText(nil, sum, onion.Env{})))
	if err != nil {
		return onion.Value{}, fmt.Errorf("engine: bad sum: %w", err)
	}
	avg, err := pgnumeric.Avg(d, count)
	if err != nil {
		return onion.Value{}, err
	}
	return numericType.ParseText([]byte(avg.String()), onion.Env{})
}
