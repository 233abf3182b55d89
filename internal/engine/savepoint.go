package engine

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// savepoint is the catalog this session's transaction had (txCat) when
// the client set a savepoint: ROLLBACK TO SAVEPOINT undoes on the server
// the DDL and peels sent since, so the session must plan without them
// too. A peel rolled back but still planned for would compare
// ciphertexts of one layer with values encrypted at another.
type savepoint struct {
	name string
	cat  *catalog.Snapshot
}

// savepointStatement reports whether st sets, releases or rolls back to a
// savepoint.
func savepointStatement(st rewrite.Statement) (*pg_query.TransactionStmt, bool) {
	ts := st.Tree.GetStmt().GetTransactionStmt()
	if ts == nil {
		return nil, false
	}
	switch ts.Kind {
	case pg_query.TransactionStmtKind_TRANS_STMT_SAVEPOINT, pg_query.TransactionStmtKind_TRANS_STMT_RELEASE, pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
		return ts, true
	}
	return nil, false
}

// trackSavepoint follows st's effect on the transaction's savepoints, in
// the order statements run (planned in the simple protocol, bound in the
// extended one). It assumes the statement succeeds: one that fails leaves
// the transaction aborted, and only a whole ROLLBACK (which drops the
// stack) ends that.
func (s *session) trackSavepoint(st rewrite.Statement) {
	ts, ok := savepointStatement(st)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last := -1
	for i := len(s.savepoints) - 1; i >= 0; i-- {
		if s.savepoints[i].name == ts.SavepointName {
			last = i
			break
		}
	}
	switch ts.Kind {
	case pg_query.TransactionStmtKind_TRANS_STMT_SAVEPOINT:
		s.savepoints = append(s.savepoints, savepoint{name: ts.SavepointName, cat: s.txCat})
	case pg_query.TransactionStmtKind_TRANS_STMT_RELEASE:
		if last >= 0 {
			s.savepoints = s.savepoints[:last]
		}
	case pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
		if last >= 0 {
			s.savepoints = s.savepoints[:last+1]
			if s.txCat != s.savepoints[last].cat {
				s.txCat = s.savepoints[last].cat
				s.txGen++
			}
		}
	}
}
