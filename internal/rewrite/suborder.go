package rewrite

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// DropSubqueryOrder removes ORDER BY from the subqueries of st whose
// order cannot change the result: a scalar, EXISTS, IN or op ANY/ALL
// subquery without LIMIT, OFFSET or locking (not ARRAY(...), whose
// elements keep the order), ordered by columns or output positions only,
// which cannot fail. Django orders such subqueries by the model's
// default ordering (an encrypted text column the server cannot order).
func DropSubqueryOrder(st Statement) {
	inspect(st.Tree.ProtoReflect(), func(m protoreflect.Message) bool {
		sl, ok := m.Interface().(*pg_query.SubLink)
		if !ok || sl.SubLinkType == pg_query.SubLinkType_ARRAY_SUBLINK || sl.SubLinkType == pg_query.SubLinkType_CTE_SUBLINK {
			return true
		}
		sub := sl.GetSubselect().GetSelectStmt()
		if sub == nil || len(sub.SortClause) == 0 || sub.LimitCount != nil || sub.LimitOffset != nil || len(sub.LockingClause) > 0 {
			return true
		}
		for _, s := range sub.SortClause {
			n := s.GetSortBy().GetNode()
			if n.GetColumnRef() == nil && !isOutputPosition(n) {
				return true
			}
		}
		sub.SortClause = nil
		return true
	})
}
