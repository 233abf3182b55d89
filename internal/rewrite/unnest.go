package rewrite

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
)

// UnnestValues rewrites the bulk INSERT of ORMs that bind on the client,
//
//	INSERT INTO t (a, b) SELECT * FROM UNNEST(('{1,2}'::int2[])::integer[], ('{x,y}')::text[])
//
// (Django's bulk_create with psycopg's client-side binding), into the
// INSERT ... VALUES it means, one row per array element, each element a
// constant cast to its column's element type, so that PlanInsert can
// encrypt the values of encrypted columns. ok is false, and st is left
// alone, for any other statement (parameters instead of array constants
// included).
func UnnestValues(st Statement) (out Statement, ok bool, err error) {
	ins := st.Tree.GetStmt().GetInsertStmt()
	sel := ins.GetSelectStmt().GetSelectStmt()
	if ins == nil || sel == nil || ins.WithClause != nil || len(ins.Cols) == 0 || len(sel.ValuesLists) > 0 ||
		sel.WhereClause != nil || len(sel.GroupClause) > 0 || sel.HavingClause != nil || len(sel.SortClause) > 0 ||
		sel.LimitCount != nil || sel.LimitOffset != nil || sel.WithClause != nil || len(sel.DistinctClause) > 0 || sel.Op != pg_query.SetOperation_SETOP_NONE ||
		len(sel.TargetList) != 1 || len(sel.FromClause) != 1 {
		return st, false, nil
	}
	if cr := sel.TargetList[0].GetResTarget().GetVal().GetColumnRef(); cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetAStar() == nil {
		return st, false, nil
	}
	rf := sel.FromClause[0].GetRangeFunction()
	if rf == nil || rf.Lateral || rf.Ordinality || rf.Alias != nil || len(rf.Functions) != 1 {
		return st, false, nil
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 {
		return st, false, nil
	}
	fc := items[0].GetFuncCall()
	if fc == nil || funcName(fc) != "unnest" || len(fc.Args) != len(ins.Cols) || fc.AggFilter != nil || fc.Over != nil {
		return st, false, nil
	}
	var columns [][]*string
	var types []*pg_query.TypeName
	rows := 0
	for _, a := range fc.Args {
		tc := a.GetTypeCast()
		if tc == nil || len(tc.TypeName.GetArrayBounds()) != 1 {
			return st, false, nil
		}
		inner := tc.Arg
		for inner.GetTypeCast() != nil {
			inner = inner.GetTypeCast().Arg
		}
		lit, isString := inner.GetAConst().GetVal().(*pg_query.A_Const_Sval)
		if !isString {
			return st, false, nil
		}
		elems, err := parseArrayLiteral(lit.Sval.Sval)
		if err != nil {
			return st, true, err
		}
		elem := proto.Clone(tc.TypeName).(*pg_query.TypeName)
		elem.ArrayBounds = nil
		columns, types = append(columns, elems), append(types, elem)
		rows = max(rows, len(elems))
	}
	if rows == 0 {
		return st, false, nil
	}
	// UNNEST of several arrays pads the shorter ones with NULLs.
	lists := make([]*pg_query.Node, rows)
	for r := range rows {
		vals := make([]*pg_query.Node, len(columns))
		for c, elems := range columns {
			if r >= len(elems) || elems[r] == nil {
				vals[c] = nullConst()
				continue
			}
			vals[c] = &pg_query.Node{Node: &pg_query.Node_TypeCast{TypeCast: &pg_query.TypeCast{
				Arg: pg_query.MakeAConstStrNode(*elems[r], -1), TypeName: proto.Clone(types[c]).(*pg_query.TypeName), Location: -1}}}
		}
		lists[r] = pg_query.MakeListNode(vals)
	}
	out = st.Clone()
	oins := out.Tree.GetStmt().GetInsertStmt()
	oins.SelectStmt = &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		ValuesLists: lists, LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT, Op: pg_query.SetOperation_SETOP_NONE}}}
	sql, err := out.Deparse()
	if err != nil {
		return st, true, fmt.Errorf("rewrite: deparsing the VALUES of a bulk INSERT: %w", err)
	}
	stmts, err := Parse(sql)
	if err != nil || len(stmts) != 1 {
		return st, true, fmt.Errorf("rewrite: reparsing the VALUES of a bulk INSERT: %v", err)
	}
	return stmts[0], true, nil
}

// parseArrayLiteral reads the text form of a one-dimensional array
// ({a,"b c",NULL}): its elements, nil for NULL.
func parseArrayLiteral(s string) ([]*string, error) {
	bad := func(why string) error {
		return &pgconn.PgError{Severity: "ERROR", Code: "22P02", Message: fmt.Sprintf("malformed array literal: %q", s), Detail: why}
	}
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, bad(`array value must start with "{"`)
	}
	body := s[1 : len(s)-1]
	var out []*string
	if strings.TrimSpace(body) == "" {
		return out, nil
	}
	for i := 0; ; {
		for i < len(body) && isArraySpace(body[i]) {
			i++
		}
		var elem strings.Builder
		quoted := false
		if i < len(body) && body[i] == '"' {
			quoted = true
			i++
			for {
				if i >= len(body) {
					return nil, bad("unterminated quoted element")
				}
				c := body[i]
				i++
				if c == '\\' {
					if i >= len(body) {
						return nil, bad("unexpected end after a backslash")
					}
					elem.WriteByte(body[i])
					i++
					continue
				}
				if c == '"' {
					break
				}
				elem.WriteByte(c)
			}
			for i < len(body) && isArraySpace(body[i]) {
				i++
			}
		} else {
			start := i
			for i < len(body) && body[i] != ',' {
				if body[i] == '{' || body[i] == '"' {
					return nil, bad("nested arrays and stray quotes are not supported")
				}
				if body[i] == '\\' {
					i++
					if i >= len(body) {
						return nil, bad("unexpected end after a backslash")
					}
				}
				i++
			}
			raw := strings.TrimRight(body[start:i], " \t\n\r\v\f")
			for j := 0; j < len(raw); j++ {
				if raw[j] == '\\' {
					j++
				}
				elem.WriteByte(raw[j])
			}
			if raw == "" {
				return nil, bad("empty element")
			}
		}
		v := elem.String()
		if !quoted && strings.EqualFold(v, "NULL") {
			out = append(out, nil)
		} else {
			out = append(out, &v)
		}
		if i >= len(body) {
			return out, nil
		}
		if body[i] != ',' {
			return nil, bad("junk after an element")
		}
		i++
	}
}

func isArraySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
