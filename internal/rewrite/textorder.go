package rewrite

import (
	"math"
	"strconv"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/pgonion/pgonion/internal/onion"
)

// This file holds the order of encrypted text columns. Their Ord onion
// holds the OPE ciphertext of an 8-byte prefix (onion.OrdPrefixLen), so
// under the C collation the server can only approximate their order:
//
//   - a range (c < v, c BETWEEN a AND b) becomes a prefilter on the
//     prefixes (c__ord <= OPE(prefix(v))), and the proxy compares the
//     decrypted values exactly (Residual.Compare);
//   - ORDER BY sorts on the prefixes, and the proxy sorts each run of rows
//     with equal prefixes by the decrypted values (ProxySort); a LIMIT
//     becomes FETCH FIRST ... WITH TIES on the server, so that every row
//     of the last run reaches the proxy.
//
// The database's collation must be C or POSIX (the engine checks it):
// under any other collation PostgreSQL orders text differently.

// hiddenCol is the decrypted value of an encrypted column the proxy reads
// without showing it: full is a row's exact value (with its salts); not
// full, the value of a group (GROUP BY or DISTINCT, Eq onion at DET).
type hiddenCol struct {
	c    *encCol
	full bool
}

// hiddenValue asks for the decrypted value of c as a hidden result column
// and returns its index in QueryPlan.Columns-to-be, counted from the first
// hidden column.
func (q *planner) hiddenValue(c *encCol, full bool) int {
	for i, h := range q.residualCols {
		if h.full == full && h.c.qualifier == c.qualifier && h.c.col.ID == c.col.ID {
			return i
		}
	}
	q.residualCols = append(q.residualCols, hiddenCol{c: c, full: full})
	return len(q.residualCols) - 1
}

// textRange rewrites "c op value" (op a range, seen from c) over an
// encrypted text column: the server keeps the rows whose prefix may
// qualify, the proxy checks the value.
func (q *planner) textRange(e *pg_query.A_Expr, l *operand, v **pg_query.Node, op string, pc predCtx) error {
	c := l.c
	if err := q.textRangeAllowed(l, op, pc); err != nil {
		return err
	}
	serverOp := ">="
	if op == "<" || op == "<=" {
		serverOp = "<="
	}
	h, err := q.hole(c, HoleOPE, serverOp, *v)
	if err != nil {
		return err
	}
	q.plan.Residuals = append(q.plan.Residuals, Residual{Column: q.hiddenValue(c, true), Compare: &CompareCheck{Op: op, Hole: len(q.plan.Holes) - 1}})
	*v = h
	if e.Lexpr == h {
		e.Rexpr = c.ref("_ord")
		serverOp = flip(serverOp)
	} else {
		e.Lexpr = c.ref("_ord")
	}
	e.Name = []*pg_query.Node{pg_query.MakeStrNode(serverOp)}
	return nil
}

// textBetween rewrites "c BETWEEN lo AND hi" over an encrypted text
// column, as c >= lo AND c <= hi.
func (q *planner) textBetween(e *pg_query.A_Expr, l *operand, list *pg_query.List, pc predCtx) error {
	c := l.c
	if err := q.textRangeAllowed(l, "BETWEEN", pc); err != nil {
		return err
	}
	for i, op := range []string{">=", "<="} {
		h, err := q.hole(c, HoleOPE, op, list.Items[i])
		if err != nil {
			return err
		}
		q.plan.Residuals = append(q.plan.Residuals, Residual{Column: q.hiddenValue(c, true), Compare: &CompareCheck{Op: op, Hole: len(q.plan.Holes) - 1}})
		list.Items[i] = h
	}
	e.Lexpr = c.ref("_ord")
	return nil
}

// textRangeAllowed refuses a range over a text operand that the proxy
// cannot check row by row, and records the Ord onion it needs.
func (q *planner) textRangeAllowed(l *operand, op string, pc predCtx) error {
	c := l.c
	if l.desc != c.name() {
		return Refusal("%s over %s in %s is not supported: the server orders encrypted text only by its first %d bytes", op, l.desc, pc.construct, onion.OrdPrefixLen)
	}
	if !pc.conj {
		return Refusal("%s on encrypted text column %s is only supported in conditions of the outermost query's WHERE joined by AND (not under OR or NOT, nor in subqueries, JOIN ... ON, HAVING or CASE; here: %s): the server compares only the first %d bytes, and the proxy checks the rest on the rows it returns", op, c.name(), pc.construct, onion.OrdPrefixLen)
	}
	c.construct = pc.construct
	return q.need(c, onion.KindOrd)
}

// sortItem is one ORDER BY item of the outermost level, as the proxy may
// need it to complete an order on an encrypted text column.
type sortItem struct {
	sb *pg_query.SortBy
	// text is an encrypted text key; out the index in level.outs of the
	// output showing its decrypted value of a row (-1 when none).
	text *encCol
	out  int
	// unordered is set for a text key without an Ord onion: the server
	// cannot order it at all, the proxy sorts the rows by it.
	unordered bool
	// cipher is an encrypted non-text key's OPE ciphertext expression
	// (its Ord onion), or cipherOut >= 0 the output column holding it
	// (MIN or MAX).
	cipher    *pg_query.Node
	cipherOut int
	// plain is a plaintext key's expression (for a rank), nil when it
	// cannot be ranked (it holds a subquery).
	plain *pg_query.Node
}

// textKey returns the index of the first encrypted text key, -1.
func (l *level) textKey() int {
	for i, it := range l.sortItems {
		if it.text != nil {
			return i
		}
	}
	return -1
}

// desc and nullsFirst are the direction of an ORDER BY item.
func desc(sb *pg_query.SortBy) bool { return sb.SortbyDir == pg_query.SortByDir_SORTBY_DESC }

func nullsFirst(sb *pg_query.SortBy) bool {
	switch sb.SortbyNulls {
	case pg_query.SortByNulls_SORTBY_NULLS_FIRST:
		return true
	case pg_query.SortByNulls_SORTBY_NULLS_LAST:
		return false
	}
	return desc(sb)
}

// proxySort plans the proxy's part of an ORDER BY with an encrypted text
// key: the run columns and sort keys, hidden columns the server adds
// (hidden appends one and returns its server column), and the server's
// LIMIT. visible is the number of visible columns (indexes of hidden
// values are counted from it).
func (l *level) proxySort(hidden func(*pg_query.Node) int, visible int) error {
	q, sel := l.q, l.sel
	j := l.textKey()
	items := l.sortItems
	withTies := sel.LimitOption == pg_query.LimitOption_LIMIT_OPTION_WITH_TIES
	sel.LimitOption = pg_query.LimitOption_LIMIT_OPTION_DEFAULT
	pushLimit := false
	if len(q.plan.Residuals) == 0 && q.plan.Limit.Const != nil && q.plan.Offset.Param == 0 {
		var off int64
		if q.plan.Offset.Const != nil {
			off = max(*q.plan.Offset.Const, 0)
		}
		if n := *q.plan.Limit.Const; n >= 0 && n <= math.MaxInt64-off {
			// FETCH FIRST n ROWS WITH TIES on the prefix order: every row
			// the proxy's sort may put among the first n.
			sel.LimitCount = int8Const(n + off)
			sel.LimitOption = pg_query.LimitOption_LIMIT_OPTION_WITH_TIES
			pushLimit = true
		}
	}
	if items[j].unordered {
		// No prefix to order or tie on: the server sends every row
		// ordered by the keys before this one, the proxy sorts the rest.
		pushLimit = false
		sel.LimitCount, sel.LimitOption = nil, pg_query.LimitOption_LIMIT_OPTION_DEFAULT
	}
	full := pushLimit || withTies || items[j].unordered
	for _, it := range items[j+1:] {
		if it.text != nil {
			full = true
		}
	}
	value := func(it sortItem) int {
		if it.out >= 0 && l.outs[it.out].kind == outValue {
			return it.out
		}
		return visible + q.hiddenValue(it.text, !l.isGrouped() && !plainDistinct(sel.DistinctClause))
	}
	cipher := func(it sortItem) int {
		if it.cipherOut >= 0 {
			return it.cipherOut
		}
		return hidden(it.cipher)
	}
	rank := func(it sortItem) (int, error) {
		if it.plain == nil {
			return 0, Refusal("ORDER BY with a subquery together with an order on encrypted text column %s is not supported", items[j].text.name())
		}
		win := &pg_query.SortBy{Node: proto.Clone(it.plain).(*pg_query.Node), SortbyDir: it.sb.SortbyDir, SortbyNulls: it.sb.SortbyNulls, UseOp: it.sb.UseOp, Location: -1}
		fc := &pg_query.FuncCall{Funcname: []*pg_query.Node{pg_query.MakeStrNode("dense_rank")}, Over: &pg_query.WindowDef{
			OrderClause: []*pg_query.Node{{Node: &pg_query.Node_SortBy{SortBy: win}}}, FrameOptions: 1058, Location: -1}, Location: -1}
		return hidden(&pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: fc}}), nil
	}
	ps := &ProxySort{WithTies: withTies}
	for _, it := range items[:j] {
		if it.cipher != nil || it.cipherOut >= 0 {
			ps.Run = append(ps.Run, cipher(it))
			continue
		}
		k, err := rank(it)
		if err != nil {
			return err
		}
		ps.Run = append(ps.Run, k)
	}
	if !items[j].unordered {
		ps.Run = append(ps.Run, hidden(items[j].text.ref("_ord")))
	}
	ps.Keys = append(ps.Keys, SortKey{Kind: SortValue, Column: value(items[j]), Desc: desc(items[j].sb), NullsFirst: nullsFirst(items[j].sb)})
	if full {
		for _, it := range items[j+1:] {
			switch {
			case it.text != nil:
				ps.Keys = append(ps.Keys, SortKey{Kind: SortValue, Column: value(it), Desc: desc(it.sb), NullsFirst: nullsFirst(it.sb)})
			case it.cipher != nil || it.cipherOut >= 0:
				ps.Keys = append(ps.Keys, SortKey{Kind: SortCipher, Column: cipher(it), Desc: desc(it.sb), NullsFirst: nullsFirst(it.sb)})
			default:
				k, err := rank(it)
				if err != nil {
					return err
				}
				ps.Keys = append(ps.Keys, SortKey{Kind: SortRank, Column: k})
			}
		}
	}
	switch {
	case items[j].unordered:
		sel.SortClause = sel.SortClause[:j]
	case pushLimit:
		// The later keys are the proxy's: ties on the server are on the
		// keys up to the text key's prefix.
		sel.SortClause = sel.SortClause[:j+1]
	}
	q.plan.Sort = ps
	return nil
}

// int8Const is the constant n (beyond int4, a numeric literal, which
// PostgreSQL reads as bigint where a bigint is expected).
func int8Const(n int64) *pg_query.Node {
	if n <= math.MaxInt32 {
		return pg_query.MakeAConstIntNode(n, -1)
	}
	return &pg_query.Node{Node: &pg_query.Node_AConst{AConst: &pg_query.A_Const{
		Val: &pg_query.A_Const_Fval{Fval: &pg_query.Float{Fval: strconv.FormatInt(n, 10)}}, Location: -1}}}
}
