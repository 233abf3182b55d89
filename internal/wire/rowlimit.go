package wire

import (
	"encoding/binary"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Row limits of Execute over rows the proxy computes.
//
// A client that reads a portal in parts (pgjdbc's fetch size, asyncpg's
// cursors) sends Execute with a row limit and expects at most that many
// rows, then PortalSuspended while rows remain. When the portal's
// rewriter sorts, filters or aggregates, the server's rows are not the
// client's: a limit passed on to the server would end a part with rows
// still held in the proxy, or with none at all, which such clients take
// for the end of the result. Those portals run to completion on the
// server at their first Execute; the session keeps the rows the rewriter
// gives, and hands them out by each Execute's limit, as the server would.
// The later Executes still reach the server (with no limit), so that a
// portal closed or lost there fails as it would; a completed portal
// returns no rows.

// rowLimit is an Execute of such a portal.
type rowLimit struct {
	held  *heldRows
	max   int32 // the client's row limit; 0 for all
	first bool  // the Execute that runs the portal
}

// heldRows are the rows of a portal run to completion not yet sent, and
// its command tag.
type heldRows struct {
	rows []*pgproto3.DataRow
	tag  []byte
}

// keep stores a copy of row.
func (h *heldRows) keep(row *pgproto3.DataRow) {
	n := 0
	for _, v := range row.Values {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	c := &pgproto3.DataRow{Values: make([][]byte, len(row.Values))}
	for i, v := range row.Values {
		if v != nil {
			buf = append(buf, v...)
			c.Values[i] = buf[len(buf)-len(v):]
		}
	}
	h.rows = append(h.rows, c)
}

// wholeResult reports whether rr's rows may differ in number or order
// from the server's: a RowReleaser that does not say otherwise.
func wholeResult(rr ResultRewriter) bool {
	if _, ok := rr.(RowReleaser); !ok {
		return false
	}
	ra, ok := rr.(ReleasesAtSuspend)
	return !ok || !ra.ReleasesAtSuspend()
}

// limitExecute returns the rowLimit of an Execute of pt whose arguments
// after the portal name are rest, or nil when the Execute goes to the
// server as sent.
func limitExecute(pt *boundPortal, rest []byte) *rowLimit {
	if pt.stmt == nil || pt.stmt.CopyIn != nil || len(rest) < 4 {
		return nil
	}
	max := max(int32(binary.BigEndian.Uint32(rest)), 0) // PostgreSQL: <= 0 is all
	if pt.held != nil {
		return &rowLimit{held: pt.held, max: max}
	}
	if max == 0 || !wholeResult(pt.results) {
		return nil
	}
	pt.held = &heldRows{}
	return &rowLimit{held: pt.held, max: max, first: true}
}

// completeLimited answers the server's CommandComplete of a limited
// Execute: after the first, the rewriter's last rows join those kept and
// its tag is kept; then the Execute gets its part of the rows.
func (ss *session) completeLimited(lim *rowLimit, msg, scratch []byte, rr ResultRewriter) ([]byte, error) {
	if lim.first {
		scratch, err := ss.release(scratch, rr, true)
		ss.divert = nil
		if err != nil {
			return scratch, err
		}
		tag, _ := cstring(body(msg))
		out := []byte(tag)
		if tr, ok := rr.(TagRewriter); ok {
			if err := guard(ss.log, "CommandTag", func() error { out = tr.CommandTag(out); return nil }); err != nil {
				return scratch, &statementError{err}
			}
		}
		lim.held.tag = append([]byte(nil), out...)
	}
	h := lim.held
	n, suspend := len(h.rows), false
	if lim.max > 0 && int(lim.max) <= n {
		// The server suspends when the limit is reached, even with
		// no row left: the next Execute completes with none.
		n, suspend = int(lim.max), true
	}
	var err error
	for i, row := range h.rows[:n] {
		if scratch, err = writeMsg(ss.cw, scratch, row); err != nil {
			return scratch, err
		}
		h.rows[i] = nil
	}
	h.rows = h.rows[n:]
	if suspend {
		return writeMsg(ss.cw, scratch, &pgproto3.PortalSuspended{})
	}
	return writeMsg(ss.cw, scratch, &pgproto3.CommandComplete{CommandTag: tagWithCount(h.tag, n)})
}

// tagWithCount returns tag with its row count (its last word, when a
// number) replaced by n: like the server's, the tag of a portal's last
// Execute counts the rows of that Execute.
func tagWithCount(tag []byte, n int) []byte {
	i := len(tag)
	for i > 0 && tag[i-1] >= '0' && tag[i-1] <= '9' {
		i--
	}
	if i == len(tag) || i == 0 || tag[i-1] != ' ' {
		return tag
	}
	return strconv.AppendInt(append([]byte(nil), tag[:i]...), int64(n), 10)
}
