package wire

import "bytes"

// The transaction epoch counts the server's answers that may end or
// begin a transaction: a ReadyForQuery outside a transaction block (an
// implicit transaction ended), an ErrorResponse, and a CommandComplete
// whose tag is not one of the statements below, which run inside the
// current transaction (COMMIT, ROLLBACK, BEGIN, CALL and DO are counted,
// and so is any tag not known here). Two equal epochs, with nothing
// that could end a transaction unanswered in between, mean one
// transaction: what the proxy read of it (its start time) still holds.

// inTransactionTags are the command tags (their first word) of
// statements that neither end nor begin a transaction.
var inTransactionTags = [][]byte{
	[]byte("SELECT"), []byte("INSERT"), []byte("UPDATE"), []byte("DELETE"),
	[]byte("MERGE"), []byte("FETCH"), []byte("MOVE"), []byte("COPY"),
	[]byte("SAVEPOINT"), []byte("RELEASE"), []byte("SET"), []byte("SHOW"),
}

// endsTransactionMaybe reports whether the server's message of type t
// with body b may end or begin a transaction.
func endsTransactionMaybe(t byte, b []byte) bool {
	switch t {
	case 'Z':
		return len(b) == 0 || b[0] != 'T'
	case 'E':
		return true
	case 'C':
		tag := b
		if i := bytes.IndexAny(tag, " \x00"); i >= 0 {
			tag = tag[:i]
		}
		for _, k := range inTransactionTags {
			if bytes.Equal(tag, k) {
				return false
			}
		}
		return true
	}
	return false
}

// txEpochNow implements SessionInfo.TxEpoch (clientToServer only).
func (ss *session) txEpochNow() (epoch uint64, settled bool) {
	// The queue first: an answer counts in the epoch before its request
	// leaves the queue, so an epoch read after finding no request that
	// runs statements includes every answer to one.
	settled = ss.q.runsNothing()
	return ss.txEpoch.Load(), settled
}
