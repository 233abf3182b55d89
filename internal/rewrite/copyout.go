package rewrite

import (
	"fmt"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/pgonion/pgonion/internal/pgcopy"
)

// CopyOutPlan is a COPY ... TO STDOUT the proxy answers by running a
// query and writing its decrypted rows in the client's format:
//
//	COPY t (a, b) TO STDOUT (FORMAT csv)  ->  SELECT a, b FROM ONLY t
//	COPY (SELECT ...) TO STDOUT           ->  SELECT ...
//
// Query is planned like a client's SELECT.
type CopyOutPlan struct {
	Query   Statement
	Options pgcopy.Options
	// Table is the table of COPY table TO ("" for COPY (query) TO).
	Table Relation
	// Refusal, when set, refuses the COPY if Query reads encrypted
	// values (else it runs as it is): a server-side file or PROGRAM
	// (the server would write ciphertexts), FORMAT binary.
	Refusal error
}

// PlanCopyOut plans st, a COPY ... TO, as a query; nil for COPY FROM. A
// query other than SELECT is refused.
func PlanCopyOut(st Statement) (*CopyOutPlan, error) {
	cs := st.Tree.Stmt.GetCopyStmt()
	if cs == nil || cs.IsFrom {
		return nil, nil
	}
	p := &CopyOutPlan{}
	switch {
	case cs.IsProgram || cs.Filename != "":
		p.Refusal = Refusal("COPY ... TO a server-side file or PROGRAM over encrypted columns is not supported: the server would write ciphertexts; use COPY ... TO STDOUT (psql's \\copy) through the proxy")
	case copyFormat(cs.Options) == "binary":
		p.Refusal = Refusal("COPY ... TO STDOUT with FORMAT binary over encrypted columns is not supported: use text or csv")
	default:
		o, err := pgcopy.ParseOptionsTo(cs.Options)
		if err != nil {
			return nil, err
		}
		p.Options = o
	}
	var sql string
	var err error
	if cs.Query != nil {
		if cs.Query.GetSelectStmt() == nil {
			return nil, Refusal("COPY (query) TO over encrypted columns is supported for a SELECT only")
		}
		if sql, err = deparseNode(cs.Query, st.version); err != nil {
			return nil, fmt.Errorf("rewrite: deparsing the query of a COPY: %w", err)
		}
	} else {
		// COPY t TO copies t's own rows, not those of tables inheriting
		// from it: FROM ONLY.
		p.Table = Relation{Schema: cs.Relation.Schemaname, Name: cs.Relation.Relname}
		if p.Table.Schema == "" {
			p.Table.Schema = DefaultSchema
		}
		rel := proto.Clone(cs.Relation).(*pg_query.RangeVar)
		rel.Inh = false
		list := []*pg_query.Node{}
		for _, n := range cs.Attlist {
			list = append(list, pg_query.MakeResTargetNodeWithVal(&pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{pg_query.MakeStrNode(fieldName(n))}}}}, -1))
		}
		if len(list) == 0 {
			list = append(list, pg_query.MakeResTargetNodeWithVal(&pg_query.Node{Node: &pg_query.Node_ColumnRef{ColumnRef: &pg_query.ColumnRef{Fields: []*pg_query.Node{{Node: &pg_query.Node_AStar{AStar: &pg_query.A_Star{}}}}}}}, -1))
		}
		sel := &pg_query.SelectStmt{TargetList: list, FromClause: []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: rel}}},
			LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg_query.SetOperation_SETOP_NONE}
		if sql, err = deparseNode(&pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}}, st.version); err != nil {
			return nil, fmt.Errorf("rewrite: deparsing the query of a COPY: %w", err)
		}
	}
	sts, err := Parse(sql)
	if err != nil || len(sts) != 1 {
		return nil, fmt.Errorf("rewrite: reparsing the query of a COPY: %v", err)
	}
	p.Query = sts[0]
	return p, nil
}
