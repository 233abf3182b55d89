package engine

import (
	"errors"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/exec"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/wire"
)

// subqueriesAhead handles a SELECT that neither the server nor split
// execution can answer as it is (refusal) but whose uncorrelated
// subqueries the proxy can evaluate first (rewrite.Subqueries): it runs
// each of them on the session's server connection, ahead of the
// statement and in the client's transaction, substitutes their results,
// and plans the statement again. ok is false when there is no such
// subquery (the refusal stands).
//
// The server sees the subqueries run as statements of their own, with
// the results the proxy decrypts; what the statement then compares with
// them reaches it encrypted.
func (s *session) subqueriesAhead(orig rewrite.Statement, lookup rewrite.TableLookup, ext *extended, refusal error) (func() (*stmtPlan, error), bool) {
	if !isRefusal(refusal) {
		return nil, false
	}
	work := orig.Clone()
	subs := rewrite.Subqueries(&work, lookup)
	if len(subs) == 0 {
		return nil, false
	}
	return func() (*stmtPlan, error) {
		switch {
		case ext != nil && (work.Kind == "Delete" || work.Kind == "Update"):
			return s.subqueriesAtBind(orig, work, subs, ext, refusal)
		case ext != nil && work.Kind == "Select":
			// As for a DELETE, where the server need not see what the
			// subqueries return; else only in the simple protocol.
			simpleOnly := withDetailOf(rewrite.Refusal("%s (its subqueries could be evaluated by the proxy first, which is supported in the simple query protocol only, not yet in the extended protocol)", refusalMessage(refusal)), refusal)
			if slices.ContainsFunc(subs, func(sub rewrite.Subquery) bool { return sub.Kind == rewrite.SubqueryLookup }) {
				return nil, simpleOnly
			}
			p, err := s.subqueriesAtBind(orig, work, subs, ext, refusal)
			if isRefusal(err) {
				return nil, simpleOnly
			}
			return p, err
		case ext != nil:
			return nil, withDetailOf(rewrite.Refusal("%s (its subqueries could be evaluated by the proxy first, which is supported in the simple query protocol only, not yet in the extended protocol)", refusalMessage(refusal)), refusal)
		case !s.aheadOK || s.exec == nil:
			return nil, withDetailOf(rewrite.Refusal("%s (its subqueries could be evaluated by the proxy first, which is supported only for the first statement of a query string)", refusalMessage(refusal)), refusal)
		}
		for _, sub := range subs {
			// A DELETE's or UPDATE's subquery runs held in the
			// statement's transaction, so the rows it locks stay locked
			// (JoinAsSubquery); a SELECT's is not held, since its
			// planning may then wait for a rewrite the held lock would
			// block.
			res, err := s.evaluateSubquery(sub, work.Kind != "Select")
			if err != nil {
				return nil, err
			}
			if err := sub.Substitute(res); err != nil {
				return nil, err
			}
		}
		tables := map[string]*catalog.Table{}
		for _, r := range rewrite.Relations(work) {
			t, err := s.lookup(r)
			if err != nil {
				return nil, err
			}
			if t != nil {
				tables[r.Schema+"."+r.Name] = t
			}
		}
		if work.Kind != "Select" {
			return s.planOnce(work, ext)
		}
		return s.planQuery(work, tables, nil)
	}, true
}

// withDetailOf gives err the DETAIL and HINT of from (split execution's
// reason, say), where err has none.
func withDetailOf(err, from error) error {
	var pe, src *pgconn.PgError
	if errors.As(err, &pe) && errors.As(from, &src) {
		if pe.Detail == "" {
			pe.Detail = src.Detail
		}
		if pe.Hint == "" {
			pe.Hint = src.Hint
		}
	}
	return err
}

func refusalMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	return err.Error()
}

// evaluateSubquery runs one subquery through the proxy (planned like a
// client's statement: it may itself need split execution or subqueries
// of its own evaluated first) and returns its decrypted rows.
func (s *session) evaluateSubquery(sub rewrite.Subquery, hold bool) (ir.SubqueryResult, error) {
	st := sub.Statement
	p, err := s.plan(st, nil)
	if err != nil && sub.Fallback != nil && isRefusal(err) {
		st = *sub.Fallback
		p, err = s.plan(st, nil)
	}
	if err != nil {
		return ir.SubqueryResult{}, err
	}
	c := &subqueryRows{}
	sql := st.SQL
	if p != nil {
		sql, c.inner = p.sql, p.results
	}
	if err := s.execAhead(sql, c, hold); err != nil {
		return ir.SubqueryResult{}, err
	}
	if c.err != nil {
		return ir.SubqueryResult{}, c.err
	}
	res := ir.SubqueryResult{Rows: c.rows, Secret: c.inner != nil}
	if sub.Kind == rewrite.SubqueryExists {
		return res, nil
	}
	if sub.Kind != rewrite.SubqueryLookup && len(c.fields) != 1 {
		return res, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "subquery must return only one column"}
	}
	for _, f := range c.fields {
		name, ok := exec.SubqueryTypeNames[f.DataTypeOID]
		if !ok {
			return res, rewrite.Refusal("a subquery returning values of type OID %d cannot be evaluated by the proxy yet", f.DataTypeOID)
		}
		res.Types = append(res.Types, name)
	}
	return res, nil
}

// subqueryRows collects the rows of a subquery the proxy runs (through
// the rewriter of its plan, when it has one), in text format.
type subqueryRows struct {
	inner  wire.ResultRewriter
	fields []pgproto3.FieldDescription
	rows   [][]*string
	err    error
}

func (c *subqueryRows) RowDescription(rd *pgproto3.RowDescription) error {
	if c.inner != nil {
		if err := c.inner.RowDescription(rd); err != nil {
			return err
		}
	}
	c.fields = append([]pgproto3.FieldDescription(nil), rd.Fields...)
	return nil
}

func (c *subqueryRows) DataRow(row *pgproto3.DataRow) error {
	if c.inner != nil {
		err := c.inner.DataRow(row)
		if err == nil {
			c.add(row)
		} else if !errors.Is(err, wire.ErrSkipRow) {
			return err
		}
		return c.release(false)
	}
	c.add(row)
	return nil
}

// Release takes the rows the inner rewriter held back.
func (c *subqueryRows) Release(atEnd bool) ([]*pgproto3.DataRow, error) {
	return nil, c.release(atEnd)
}

func (c *subqueryRows) release(atEnd bool) error {
	rel, ok := c.inner.(wire.RowReleaser)
	if !ok {
		return nil
	}
	rows, err := rel.Release(atEnd)
	if err != nil {
		return err
	}
	for _, r := range rows {
		c.add(r)
	}
	return nil
}

func (c *subqueryRows) add(row *pgproto3.DataRow) {
	out := make([]*string, len(row.Values))
	for i, v := range row.Values {
		if v != nil {
			s := string(v)
			out[i] = &s
		}
	}
	c.rows = append(c.rows, out)
}

// subqueriesAtBind is subqueriesAhead for a DELETE or UPDATE in the
// extended protocol: the server parses the statement once, each
// subquery replaced by a parameter after the client's
// (Subquery.SubstituteParam), and at each Bind the proxy runs the
// subqueries with the client's parameters, held in the statement's
// transaction (aheadQuery), and binds their results. A subquery whose
// result the proxy decrypts is refused: the server would get the
// plaintext as a parameter.
func (s *session) subqueriesAtBind(orig, work rewrite.Statement, subs []rewrite.Subquery, ext *extended, refusal error) (*stmtPlan, error) {
	n := len(ext.oids)
	for _, r := range rewrite.ParamRefs(orig) {
		n = max(n, r)
	}
	clientOIDs := slices.Clone(ext.oids)
	for len(clientOIDs) < n {
		clientOIDs = append(clientOIDs, 0)
	}
	queries := make([]*aheadQuery, len(subs))
	for i, sub := range subs {
		if sub.Kind == rewrite.SubqueryLookup {
			return nil, refusal
		}
		q, err := s.prepareAhead(sub.Statement, clientOIDs, sub.Kind != rewrite.SubqueryExists)
		if err != nil {
			return nil, err
		}
		queries[i] = q
		secretType := ""
		if q.ext != nil && q.ext.results != nil {
			// Its values come from the proxy's computation: marked
			// secret, they reach the server only encrypted (a SELECT
			// computes the rest in the proxy).
			secretType = typeNameOfOID[q.resultOID]
		}
		if err := sub.SubstituteParam(n+1+i, secretType); err != nil {
			return nil, err
		}
	}
	// Each result's parameter has the type of what it stands for, so
	// that the server reads the statement as with the subquery in it
	// ($k / 50 divides a numeric, not an integer).
	outer := &extended{oids: slices.Clone(clientOIDs)}
	for i, q := range queries {
		outer.oids = append(outer.oids, subqueryParamOID(subs[i].Kind, q.resultOID))
	}
	p, err := s.planOnce(work, outer)
	if err != nil {
		return nil, err
	}
	if p == nil {
		sql, err := work.Deparse()
		if err != nil {
			return nil, err
		}
		p = &stmtPlan{sql: sql}
	}
	// The client's parameters the server's statement does not name
	// (only the subqueries read them, or the proxy encrypts them): typed
	// as the subqueries type them, sent NULL.
	referenced := map[int]bool{}
	if sts, err := rewrite.Parse(p.sql); err == nil && len(sts) == 1 {
		for _, r := range rewrite.ParamRefs(sts[0]) {
			referenced[r] = true
		}
	}
	for i, q := range queries {
		// A result the proxy decrypted may reach the server only
		// encrypted: as a comparison value of an encrypted column,
		// which the server's statement does not name as a parameter.
		if q.ext != nil && q.ext.results != nil && referenced[n+1+i] {
			return nil, rewrite.Refusal("%s (its subquery returns values the proxy decrypts, which the server would get in plaintext)", refusalMessage(refusal))
		}
	}
	subqueryType := func(i int) uint32 {
		for _, q := range queries {
			if i < len(q.described) && q.described[i] != 0 && !slices.Contains(q.unused, i) {
				return q.described[i]
			}
		}
		return oidText
	}
	if outer.serverOIDs == nil {
		outer.serverOIDs = slices.Clone(outer.oids)
	}
	for i := range n {
		if !referenced[i+1] && i < len(outer.serverOIDs) {
			outer.serverOIDs[i] = subqueryType(i) // sent NULL: any type will do
		}
	}
	ext.serverOIDs = outer.serverOIDs
	ext.results, ext.resultFmts = outer.results, outer.resultFmts
	outerRefs := rewrite.ParamRefs(work) // the client's the statement itself reads
	ext.describe = func(pd []uint32) []uint32 {
		if outer.describe != nil {
			pd = outer.describe(pd)
		}
		pd = slices.Clone(pd[:min(n, len(pd))])
		for i := range pd {
			if !slices.Contains(outerRefs, i+1) {
				pd[i] = subqueryType(i)
			}
		}
		return pd
	}
	ext.bind = func(b *pgproto3.Bind) error {
		vals := make([][]byte, len(subs))
		for i, q := range queries {
			rows, err := q.run(s, b)
			if errors.Is(err, wire.ErrExecUnavailable) {
				return rewrite.Refusal("%s (its subqueries are evaluated by the proxy first: in the extended protocol only as the first statement after a Sync, or in a transaction block)", refusalMessage(refusal))
			}
			if err != nil {
				return err
			}
			if vals[i], err = subqueryParam(subs[i].Kind, rows.rows); err != nil {
				return err
			}
		}
		params, formats := perParameter(b, n)
		b.Parameters = append(params, vals...)
		b.ParameterFormatCodes = append(formats, make([]int16, len(vals))...)
		if outer.bind != nil {
			if err := outer.bind(b); err != nil {
				return err
			}
		}
		// What only the subqueries read (or the proxy encrypted) does
		// not reach the server.
		for i := range n + len(vals) {
			if !referenced[i+1] && i < len(b.Parameters) {
				b.Parameters[i] = nil
			}
		}
		return nil
	}
	return p, nil
}

// subqueryParamOID is the type of the parameter that replaces a subquery
// of kind k whose column has type elem (0: unknown, which the server
// infers).
func subqueryParamOID(k rewrite.SubqueryKind, elem uint32) uint32 {
	switch k {
	case rewrite.SubqueryExists:
		return oidBool
	case rewrite.SubqueryIn:
		return arrayOIDOf[elem]
	}
	return elem
}

// typeNameOfOID names the types of arrayOIDOf's elements as pg_catalog
// does.
var typeNameOfOID = map[uint32]string{
	16: "bool", 17: "bytea", 20: "int8", 21: "int2", 23: "int4", 25: "text", 700: "float4", 701: "float8",
	1042: "bpchar", 1043: "varchar", 1082: "date", 1083: "time", 1114: "timestamp", 1184: "timestamptz",
	1186: "interval", 1700: "numeric", 2950: "uuid",
}

// arrayOIDOf is the array type of each element type a subquery's
// column may have (pg_type.typarray).
var arrayOIDOf = map[uint32]uint32{
	16: 1000, 17: 1001, 18: 1002, 20: 1016, 21: 1005, 23: 1007, 25: 1009, 26: 1028,
	700: 1021, 701: 1022, 869: 1041, 650: 651, 1042: 1014, 1043: 1015, 1082: 1182,
	1083: 1183, 1114: 1115, 1184: 1185, 1186: 1187, 1266: 1270, 1700: 1231, 2950: 2951,
	3802: 3807, 114: 199,
}

// perParameter returns b's first n parameters (NULL past the client's)
// and one format code for each.
func perParameter(b *pgproto3.Bind, n int) ([][]byte, []int16) {
	params := make([][]byte, n)
	copy(params, b.Parameters)
	formats := make([]int16, n)
	for i := range formats {
		switch len(b.ParameterFormatCodes) {
		case 0:
		case 1:
			formats[i] = b.ParameterFormatCodes[0]
		default:
			if i < len(b.ParameterFormatCodes) {
				formats[i] = b.ParameterFormatCodes[i]
			}
		}
	}
	return params, formats
}

// subqueryParam is the text value of the parameter that replaces a
// subquery of kind k (SubstituteParam) given its rows: an array literal
// of the values (IN), the value (scalar: NULL without a row, more than
// one is PostgreSQL's 21000), t or f (EXISTS).
func subqueryParam(k rewrite.SubqueryKind, rows [][]*string) ([]byte, error) {
	switch k {
	case rewrite.SubqueryScalar:
		switch len(rows) {
		case 0:
			return nil, nil
		case 1:
			if rows[0][0] == nil {
				return nil, nil
			}
			return []byte(*rows[0][0]), nil
		}
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "21000", Message: "more than one row returned by a subquery used as an expression"}
	case rewrite.SubqueryExists:
		if len(rows) > 0 {
			return []byte("t"), nil
		}
		return []byte("f"), nil
	}
	b := []byte{'{'}
	for i, row := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		if row[0] == nil {
			b = append(b, "NULL"...)
			continue
		}
		b = append(b, '"')
		for _, c := range []byte(*row[0]) {
			if c == '"' || c == '\\' {
				b = append(b, '\\')
			}
			b = append(b, c)
		}
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// execAhead runs sql ahead of the statement being planned in the simple
// protocol. With hold, when the statement is alone in its query string,
// it runs in the statement's own transaction (wire.SideQuery.Hold), so
// the row locks it takes last until the statement; otherwise it is a
// statement of its own.
func (s *session) execAhead(sql string, rows wire.ResultRewriter, hold bool) error {
	if hold && s.aheadAlone && s.execQuery != nil {
		return s.execQuery(wire.SideQuery{SQL: sql, Hold: true}, rows)
	}
	return s.exec(sql, rows)
}

// aheadHeld reports whether the row locks of a read execAhead runs with
// hold last until the statement being planned: it runs in the
// statement's transaction, or in the client's open transaction block.
func (s *session) aheadHeld() bool {
	s.mu.Lock()
	inBlock := s.lastStatus == 'T'
	s.mu.Unlock()
	return (s.aheadAlone && s.execQuery != nil) || inBlock
}
