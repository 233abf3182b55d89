package rewrite

import (
	"fmt"
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// ForeignKeyOverEq rewrites ALTER TABLE ... ADD [CONSTRAINT ...] FOREIGN
// KEY (fk) REFERENCES t [(pk)] so that the server enforces it on the Eq
// cells of the encrypted columns named in encFK and encPK: both at DET
// under one join group's key, equal values have equal cells. The
// statement must add that one constraint only.
func ForeignKeyOverEq(st Statement, encFK, encPK []string) (string, error) {
	st = st.Clone()
	at := st.Tree.GetStmt().GetAlterTableStmt()
	if at == nil || len(at.Cmds) != 1 {
		return "", Refusal("ALTER TABLE with a foreign key between encrypted columns and other commands is not supported: add the foreign key alone")
	}
	c := at.Cmds[0].GetAlterTableCmd().GetDef().GetConstraint()
	if c.GetContype() != pg_query.ConstrType_CONSTR_FOREIGN {
		return "", fmt.Errorf("rewrite: not an ADD FOREIGN KEY")
	}
	toEq := func(list []*pg_query.Node, enc []string) []*pg_query.Node {
		out := make([]*pg_query.Node, len(list))
		for i, n := range list {
			out[i] = proto.Clone(n).(*pg_query.Node)
			if name := fieldName(n); slices.Contains(enc, name) {
				out[i] = pg_query.MakeStrNode(EqColumn(name))
			}
		}
		return out
	}
	c.FkAttrs = toEq(c.FkAttrs, encFK)
	c.PkAttrs = toEq(c.PkAttrs, encPK)
	return st.Deparse()
}
