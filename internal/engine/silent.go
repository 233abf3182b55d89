package engine

import (
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/pgonion/pgonion/internal/wire"
)

// When one client statement becomes several server statements in one
// query string (CREATE TABLE AS, foreign keys in CREATE TABLE), the
// client must see one answer: the last statement's, under the client's
// command tag, the others silent.

// silentResult hides the answer of a statement the proxy added before
// the client's (wire.Silent), running its rewriter's tag for what it does
// (a DDL's catalog reload).
type silentResult struct{ inner wire.ResultRewriter }

func (silentResult) Silent() bool { return true }

func (r silentResult) RowDescription(rd *pgproto3.RowDescription) error {
	if r.inner != nil {
		return r.inner.RowDescription(rd)
	}
	return nil
}

func (r silentResult) DataRow(row *pgproto3.DataRow) error {
	if r.inner != nil {
		return r.inner.DataRow(row)
	}
	return nil
}

// CommandTag implements wire.TagRewriter.
func (r silentResult) CommandTag(tag []byte) []byte {
	if tr, ok := r.inner.(wire.TagRewriter); ok {
		return tr.CommandTag(tag)
	}
	return tag
}

// taggedAs reports its statement under a fixed command tag (running its
// rewriter's for what it does): the last of the statements one client
// statement became answers for it.
type taggedAs struct {
	inner wire.ResultRewriter
	tag   string
}

func (r taggedAs) RowDescription(rd *pgproto3.RowDescription) error {
	if r.inner != nil {
		return r.inner.RowDescription(rd)
	}
	return nil
}

func (r taggedAs) DataRow(row *pgproto3.DataRow) error {
	if r.inner != nil {
		return r.inner.DataRow(row)
	}
	return nil
}

// CommandTag implements wire.TagRewriter.
func (r taggedAs) CommandTag(tag []byte) []byte {
	if tr, ok := r.inner.(wire.TagRewriter); ok {
		tr.CommandTag(tag)
	}
	return []byte(r.tag)
}
