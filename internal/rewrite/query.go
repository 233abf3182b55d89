package rewrite

import (
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
)

// This file holds the query planner: SELECT statements that read tables
// with encrypted columns, with joins, predicates, grouping, ordering,
// aggregates and subqueries evaluated by the server over the onions.
// scope.go resolves names, predicate.go rewrites conditions, output.go
// the select list, GROUP BY and ORDER BY.

// Need is an onion layer a statement needs on the server before it can
// run: the Eq onion at DET (=, IN, GROUP BY, DISTINCT, joins) or the Ord
// onion at OPE (ranges, ORDER BY, MIN, MAX). The proxy peels the onion
// when its current layer is stronger (see DESIGN.md section 4).
type Need struct {
	Table  *catalog.Table
	Column *catalog.Column
	Kind   onion.Kind  // onion.KindEq or onion.KindOrd
	Layer  onion.Layer // onion.LayerDET or onion.LayerOPE
}

// HoleKind says what ciphertext a comparison hole becomes.
type HoleKind int

// Comparison hole kinds.
const (
	// HoleDET is the Eq onion's DET ciphertext of the value (bytea).
	HoleDET HoleKind = iota
	// HoleOPE is the Ord onion's OPE ciphertext of the value (bytea),
	// rounded for Op when the value falls between two values of the
	// column's domain.
	HoleOPE
	// HoleTokens is the search tokens of a LIKE pattern (int8[]).
	HoleTokens
	// HoleDETArray is an array of values (c = ANY($1), c <> ALL('{..}')):
	// the Eq onion's DET ciphertext of each element, as an array of the
	// cell type (bytea[] or uuid[]). ConstType is the element type of the
	// array's cast ("" when it has none).
	HoleDETArray
)

// CmpHole is a value compared with an encrypted column on the server: a
// constant of the client's SQL, a client parameter, or NULL. The proxy
// encrypts it and puts the ciphertext in the statement (Render).
type CmpHole struct {
	Table  *catalog.Table
	Column *catalog.Column
	Kind   HoleKind
	// Op is the comparison as seen from the column (c Op value): "=",
	// "<>", "<", "<=", ">" or ">=" (for HoleOPE it decides the rounding of
	// a value between two domain values; "=" and "<>" match no such value).
	Op string
	// Const is the constant's text when the client wrote a literal; Param
	// the 1-based client parameter when it wrote $n. Both unset is NULL.
	Const *string
	Param int
	// ConstType is the type PostgreSQL gives the constant before it meets
	// the column: "" for a quoted literal (of unknown type, read as the
	// column's type), "integer", "bigint" or "numeric" for a number,
	// "boolean" for TRUE or FALSE, the type name of a cast ("timestamp",
	// "int4", "text", ...). For a parameter, the type name of its cast
	// ($1::int8), "" when it has none (it takes the column's type).
	ConstType string
	// Like is the LIKE whose pattern (Const or Param) a HoleTokens holds.
	Like *ir.Like

	node *pg_query.Node // placeholder in the rewritten tree
}

// Decode says how the proxy turns server columns into a client value.
type Decode int

// Decodings of a ResultColumn of an encrypted column.
const (
	// DecodeValue decrypts the Eq onion (with Val, the salt override and
	// the row salt where present).
	DecodeValue Decode = iota
	// DecodeOrd decrypts an OPE ciphertext (MIN or MAX on the Ord onion).
	DecodeOrd
	// DecodeSum decrypts the concatenated Add ciphertexts of a group
	// (string_agg): their product is the encrypted SUM.
	DecodeSum
	// DecodeAvg is DecodeSum divided by the count in column Count, as
	// PostgreSQL's AVG computes it (numeric division).
	DecodeAvg
)

// CompareCheck is a range comparison of a text column with a value, which
// the server evaluates only on the values' 8-byte prefixes (the Ord onion
// of a text column, onion.Column.OrdIsPrefix): the proxy compares the
// decrypted value exactly (C collation: byte order).
type CompareCheck struct {
	// Op is "<", "<=", ">" or ">=", seen from the column (c Op value).
	Op string
	// Hole is the index in QueryPlan.Holes of the value: the plaintext
	// the proxy encrypted for the server's prefilter is the one compared.
	Hole int
}

// Residual is a condition the server cannot evaluate exactly, checked by
// the proxy on each row: rows that fail it are not shown. Exactly one of
// Like and Compare is set.
type Residual struct {
	// Column is the index in QueryPlan.Columns of the (hidden) value.
	Column  int
	Like    *ir.Like // checked on the decrypted value
	Compare *CompareCheck
}

// SortKind says how the proxy compares one key of a ProxySort.
type SortKind int

// Sort key kinds.
const (
	// SortValue compares the decrypted values of QueryPlan.Columns[Column]
	// (a text column: exactly, byte order).
	SortValue SortKind = iota
	// SortCipher compares the server column Column, an OPE ciphertext
	// (bytea), as bytes: their order is the values' order.
	SortCipher
	// SortRank compares the server column Column, a bigint rank the
	// server computed for a plaintext sort key (dense_rank() OVER (ORDER
	// BY key)).
	SortRank
)

// SortKey is one key of a ProxySort.
type SortKey struct {
	Kind SortKind
	// Column is an index in QueryPlan.Columns for SortValue, a server
	// column otherwise.
	Column int
	// Desc and NullsFirst are the key's direction, as PostgreSQL reads
	// the ORDER BY item (NULLS FIRST is the default of DESC).
	Desc, NullsFirst bool
}

// ProxySort completes an ORDER BY over an encrypted text column, which the
// server sorts only by the 8-byte prefixes of its values. The server's
// rows arrive sorted up to that key; consecutive rows with equal values in
// the Run columns (the earlier keys and the text key's prefix) form a run,
// which the proxy sorts stably by Keys before sending it on. With Keys
// empty beyond the text key, the server's order of the later keys is kept
// (it sorted on them within the run).
type ProxySort struct {
	// Run are server columns, compared for equality as the server sent
	// them.
	Run  []int
	Keys []SortKey
	// WithTies is FETCH FIRST ... WITH TIES: after the limit, the rows
	// equal on every key to the last one sent are sent too.
	WithTies bool
}

// QueryPlan is the rewritten form of a SELECT that reads tables with
// encrypted columns.
type QueryPlan struct {
	// Columns are the result columns, the client's first in order, then
	// hidden ones that residual checks read.
	Columns []ResultColumn
	// Visible is how many of Columns the client sees.
	Visible int
	// ServerColumns is how many columns the server's rows have: the
	// visible ones, then hidden ones (some only for the server's DISTINCT).
	ServerColumns int
	// Needs are the onion layers the statement needs.
	Needs []Need
	// Wants are onions the statement would use if its columns had them:
	// search onions their policies allow but that are not built yet. It
	// is answered without them (LIKE by the proxy); the engine builds
	// them in the background.
	Wants []Need
	// Holes are the comparison values to encrypt, in Render order.
	Holes []CmpHole
	// Residuals are checked by the proxy on each row; when there are any,
	// or Sort is set, Limit and Offset are applied by the proxy after
	// them (the server's statement then has no OFFSET, and either no
	// LIMIT or, for a Sort without residuals and constant bounds, FETCH
	// FIRST limit+offset ROWS WITH TIES on its prefix order).
	Residuals     []Residual
	Sort          *ProxySort
	Limit, Offset ir.LimitValue
	// PlainResults is set when the rows need no decryption (every output
	// is plaintext): the server's rows go to the client unchanged, and
	// Columns is empty.
	PlainResults bool

	st Statement
}

// Render returns the server SQL with each hole replaced by vals[i] (a
// ciphertext literal or a parameter reference; see ByteaLiteral,
// Int8ArrayLiteral, ParamNode). The plan may be rendered many times.
func (p *QueryPlan) Render(vals []*pg_query.Node) (string, error) {
	if len(vals) != len(p.Holes) {
		return "", fmt.Errorf("rewrite: Render got %d values for %d holes", len(vals), len(p.Holes))
	}
	for i, h := range p.Holes {
		h.node.Node = vals[i].Node
	}
	sql, err := p.st.Deparse()
	if err != nil {
		return "", fmt.Errorf("rewrite: deparsing the rewritten SELECT: %w", err)
	}
	return sql, nil
}

// TableLookup returns the encrypted table schema.name, or nil for a table
// without encrypted columns (or none at all).
type TableLookup func(schema, name string) *catalog.Table

// table returns the catalog table rv names (an unqualified name in
// DefaultSchema), nil when the catalog does not have it.
func (f TableLookup) table(rv *pg_query.RangeVar) *catalog.Table {
	schema := rv.Schemaname
	if schema == "" {
		schema = DefaultSchema
	}
	return f(schema, rv.Relname)
}

// PlanQuery rewrites a SELECT that reads tables with encrypted columns so
// that the server evaluates it over the onions:
//
//   - =, <>, IN (list), IS [NOT] NULL, GROUP BY, DISTINCT,
//     COUNT(DISTINCT c) and equi-joins on the Eq onion (DET);
//   - <, <=, >, >=, BETWEEN, ORDER BY, MIN and MAX on the Ord onion (OPE);
//     for text columns, whose Ord onion orders 8-byte prefixes, ranges
//     are a prefilter checked exactly by the proxy (top-level WHERE
//     conjuncts only) and ORDER BY is completed by the proxy (ProxySort);
//   - SUM and AVG on the Add onion: the server concatenates the group's
//     ciphertexts, the proxy multiplies and decrypts them;
//   - LIKE, ILIKE and NOT LIKE as a search-token prefilter on the server,
//     checked exactly by the proxy (top-level WHERE conjuncts only);
//   - constants and parameters on either side of a comparison, IN
//     (SELECT ...), EXISTS and scalar subqueries whose outputs line up.
//
// Two encrypted columns compare on the server only when they share keys:
// the same column (a self-join) or columns of one join group.
// Everything else that touches an encrypted column is refused with 0A000
// naming the construct and the column. st's tree is rewritten in place.
func PlanQuery(st Statement, lookup TableLookup) (*QueryPlan, error) {
	sel := st.Tree.Stmt.GetSelectStmt()
	if sel == nil {
		return nil, fmt.Errorf("rewrite: not a SELECT statement")
	}
	q := &planner{lookup: lookup, plan: &QueryPlan{st: st}}
	if err := q.topSelect(sel); err != nil {
		return nil, err
	}
	if err := checkSecrets(st); err != nil {
		return nil, err
	}
	return q.plan, nil
}

// planner holds the state of one PlanQuery.
type planner struct {
	lookup TableLookup
	plan   *QueryPlan
	needs  map[needKey]bool
	// finished are nodes already rewritten (plain subqueries met while
	// looking for operands), which must not be walked again.
	finished map[*pg_query.Node]bool
	// Hidden columns of the outermost level, added by finish: the values
	// residual checks read, the counts of AVG, and the Ord onions a
	// SELECT DISTINCT sorts on.
	residualCols []hiddenCol
	// derivedOf are the encrypted columns derived tables and CTEs pass
	// through, by their SELECT (derivedLevel).
	derivedOf   map[*pg_query.SelectStmt]*derived
	avgCounts   []*pg_query.Node
	distinctOrd []*pg_query.Node
}

type needKey struct {
	col  catalog.ID
	kind onion.Kind
}

// need records that col's onion kind must be peeled to its inner layer.
func (q *planner) need(c *encCol, kind onion.Kind) error {
	if parseBase(c) == onion.JSON {
		// Its Eq onion only stores it: PostgreSQL compares no json.
		what := "an equality"
		if kind == onion.KindOrd {
			what = "an ordering"
		}
		return &pgconn.PgError{Severity: "ERROR", Code: "42883", Message: fmt.Sprintf("could not identify %s operator for type json", what)}
	}
	if c.col.Policy == catalog.Sensitive {
		what := "equality"
		if kind == onion.KindOrd {
			what = "order"
		}
		return Refusal("%s is not supported on column %s.%s: it is declared sensitive, so the server may never learn its %s", c.construct, c.table.Name, c.col.Name, what)
	}
	if !hasCapability(c.col, kind) {
		err := Refusal("%s on encrypted column %s.%s needs its %s onion, which its policy does not give it (capabilities: %v)", c.construct, c.table.Name, c.col.Name, kind, c.col.Capabilities)
		if kind == onion.KindOrd && isText(c) {
			err.(*Refused).Hint = fmt.Sprintf("Text columns get an Ord onion (over the first %d bytes) only when declared before the table is created: proxy columns set %s.%s --policy encrypted --capabilities eq,ord,search", onion.OrdPrefixLen, c.table.Name, c.col.Name)
		}
		return err
	}
	if c.col.Incremented && (kind == onion.KindEq || kind == onion.KindOrd) {
		return Refusal("%s on encrypted column %s.%s is not supported: UPDATE ... SET %s = %s + k ran on the server, so only its Add onion is current (the column can be read, summed and averaged, not compared)", c.construct, c.table.Name, c.col.Name, c.col.Name, c.col.Name)
	}
	layer := onion.LayerDET
	if kind == onion.KindOrd {
		layer = onion.LayerOPE
	}
	k := needKey{c.col.ID, kind}
	if q.needs == nil {
		q.needs = map[needKey]bool{}
	}
	if !q.needs[k] {
		q.needs[k] = true
		q.plan.Needs = append(q.plan.Needs, Need{Table: c.table, Column: c.col, Kind: kind, Layer: layer})
	}
	return nil
}

// hasCapability reports whether an encrypted column has the onion kind.
func hasCapability(c *catalog.Column, kind onion.Kind) bool {
	if kind == onion.KindEq {
		return true // the Eq onion is always there
	}
	_, ok := c.Onions[string(kind)]
	return ok
}

// hole adds a comparison hole for value node v (a constant, parameter or
// NULL) compared with c, and returns its placeholder.
func (q *planner) hole(c *encCol, kind HoleKind, op string, v *pg_query.Node) (*pg_query.Node, error) {
	h := CmpHole{Table: c.table, Column: c.col, Kind: kind, Op: op}
	inner := Hole{Column: c.col}
	if err := holeValue(v, &inner, c.table.Name, "a comparison with"); err != nil {
		return nil, err
	}
	h.Const, h.Param = inner.Const, inner.Param
	if h.Const != nil || h.Param > 0 {
		h.ConstType = constType(v)
	}
	h.node = &pg_query.Node{Node: nullConst().Node}
	q.plan.Holes = append(q.plan.Holes, h)
	return h.node, nil
}

// constType is CmpHole.ConstType of constant n.
func constType(n *pg_query.Node) string {
	if tc := n.GetTypeCast(); tc != nil {
		if names := stringList(tc.TypeName.GetNames()); len(names) > 0 {
			return names[len(names)-1]
		}
		return ""
	}
	if e := n.GetAExpr(); e != nil && isNegation(e) {
		return constType(e.Rexpr)
	}
	c := n.GetAConst()
	if c == nil {
		return ""
	}
	switch v := c.Val.(type) {
	case *pg_query.A_Const_Ival:
		return "integer"
	case *pg_query.A_Const_Fval:
		if _, err := strconv.ParseInt(v.Fval.Fval, 10, 64); err == nil {
			return "bigint"
		}
		return "numeric"
	case *pg_query.A_Const_Boolval:
		return "boolean"
	}
	return ""
}

// isValue reports whether n is a value a hole can take: a constant, a
// parameter, NULL, a negated number, possibly cast.
func isValue(n *pg_query.Node) bool {
	if tc := n.GetTypeCast(); tc != nil {
		n = tc.Arg
	}
	switch {
	case n.GetAConst() != nil, n.GetParamRef() != nil:
		return true
	case n.GetAExpr() != nil && isNegation(n.GetAExpr()):
		return n.GetAExpr().Rexpr.GetAConst() != nil
	}
	return false
}

// planDMLWhere rewrites the WHERE clause of an UPDATE or DELETE on t
// (named qualifier in the statement) in place, like a SELECT's WHERE
// (comparisons, IN, BETWEEN, IS NULL and subqueries on the onions), and
// returns its comparison holes and the layers it needs. LIKE is refused
// there: the proxy cannot drop rows the server updates. Subqueries may
// read t again; other tables are taken as plain (the caller refuses
// statements naming other tables with encrypted columns).
func planDMLWhere(where *pg_query.Node, t *catalog.Table, qualifier string) ([]CmpHole, []Need, error) {
	q := &planner{plan: &QueryPlan{}, lookup: func(schema, name string) *catalog.Table {
		if schema == t.Schema && (name == t.Name || name == t.Physical) {
			return t
		}
		return nil
	}}
	sc := &scope{items: []*rangeItem{{qualifier: qualifier, table: t}}}
	if err := q.predicate(where, sc, predCtx{construct: "WHERE"}); err != nil {
		return nil, nil, err
	}
	if len(q.plan.Residuals) > 0 || len(q.residualCols) > 0 {
		what := "LIKE"
		if q.plan.Residuals[0].Compare != nil {
			what = "a range comparison"
		}
		return nil, nil, Refusal("%s on encrypted column %s.%s in the WHERE of UPDATE or DELETE is not supported: the proxy cannot check it exactly on rows the server changes", what, t.Name, q.residualCols[0].c.col.Name)
	}
	return q.plan.Holes, q.plan.Needs, nil
}

// FillHoles puts vals[i] (a ciphertext literal or a parameter reference)
// in the place of hole i of a plan's rewritten tree.
func FillHoles(holes []CmpHole, vals []*pg_query.Node) error {
	if len(vals) != len(holes) {
		return fmt.Errorf("rewrite: %d values for %d comparison holes", len(vals), len(holes))
	}
	for i, h := range holes {
		h.node.Node = vals[i].Node
	}
	return nil
}
