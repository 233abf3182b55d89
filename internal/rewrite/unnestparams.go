package rewrite

import (
	"fmt"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// UnnestPlan is the rewritten form of a bulk INSERT whose rows come in
// array parameters,
//
//	INSERT INTO t (a, b) SELECT * FROM UNNEST(($1)::integer[], ($2)::varchar[])
//
// (Django's bulk_create with server-side binding). Its rows are known
// only at each Bind, so they cannot become VALUES (UnnestValues): each
// encrypted column's array becomes one array per cell of the column,
// encrypted element by element at Bind, and one more array carries each
// row's salt:
//
//	INSERT INTO t (pgonion_salt, a__ord, a__eq, b) SELECT u.c0, u.c1, u.c2, u.c3
//	  FROM unnest($3::bytea[], $4::uuid[], $5::uuid[], ($2)::varchar[]) AS u(c0, c1, c2, c3)
//
// Search tokens travel as text[] of array literals, cast back per row
// (UNNEST of a two-dimensional array would flatten it).
type UnnestPlan struct {
	Table *catalog.Table
	// Arrays are the UNNEST arguments, in order.
	Arrays []UnnestArray
	// Defaults are the encrypted columns the statement leaves out whose
	// DEFAULT the proxy applies to every row, or which it computes
	// (generated columns).
	Defaults []*catalog.Column
	// Returning maps the rows of RETURNING to the client's columns; nil
	// without RETURNING.
	Returning *Projection

	version int32
	base    *pg_query.InsertStmt // without its SELECT
}

// UnnestArray is one UNNEST argument: client parameter Param, the array
// of the values of Column (nil for a plain column, whose argument the
// server gets as the client wrote it).
type UnnestArray struct {
	Param  int
	Column *catalog.Column
	name   string // the target column
	arg    *pg_query.Node
}

// PlanUnnestParams plans st when it is a bulk INSERT ... SELECT * FROM
// UNNEST(...) of array parameters into t; nil (and no error) for any
// other statement. ON CONFLICT is kept (a conflict target on an
// encrypted column names its Eq onion), DO UPDATE with SET enc =
// EXCLUDED.enc and plain columns set as PlanInsert allows.
func PlanUnnestParams(st Statement, t *catalog.Table) (*UnnestPlan, error) {
	ins := st.Tree.GetStmt().GetInsertStmt()
	sel := ins.GetSelectStmt().GetSelectStmt()
	if ins == nil || sel == nil || ins.WithClause != nil || len(ins.Cols) == 0 || len(sel.ValuesLists) > 0 ||
		sel.WhereClause != nil || len(sel.GroupClause) > 0 || sel.HavingClause != nil || len(sel.SortClause) > 0 ||
		sel.LimitCount != nil || sel.LimitOffset != nil || sel.WithClause != nil || len(sel.DistinctClause) > 0 || sel.Op != pg_query.SetOperation_SETOP_NONE ||
		len(sel.TargetList) != 1 || len(sel.FromClause) != 1 {
		return nil, nil
	}
	if cr := sel.TargetList[0].GetResTarget().GetVal().GetColumnRef(); cr == nil || len(cr.Fields) != 1 || cr.Fields[0].GetAStar() == nil {
		return nil, nil
	}
	rf := sel.FromClause[0].GetRangeFunction()
	if rf == nil || rf.Lateral || rf.Ordinality || rf.Alias != nil || len(rf.Functions) != 1 {
		return nil, nil
	}
	items := rf.Functions[0].GetList().GetItems()
	if len(items) == 0 {
		return nil, nil
	}
	fc := items[0].GetFuncCall()
	if fc == nil || funcName(fc) != "unnest" || len(fc.Args) != len(ins.Cols) || fc.AggFilter != nil || fc.Over != nil {
		return nil, nil
	}
	p := &UnnestPlan{Table: t, version: st.version}
	var holes []Hole
	var rest []protoreflect.Message
	listed := map[string]bool{}
	for i, a := range fc.Args {
		inner, array := a, false
		for inner.GetTypeCast() != nil {
			array = array || len(inner.GetTypeCast().TypeName.GetArrayBounds()) > 0
			inner = inner.GetTypeCast().Arg
		}
		pr := inner.GetParamRef()
		if pr == nil || !array {
			return nil, nil // array constants: UnnestValues
		}
		name := ins.Cols[i].GetResTarget().GetName()
		if dmlInternalColumn(t, name) {
			return nil, Refusal("INSERT into column %s.%s is not supported: the proxy alone writes it", t.Name, name)
		}
		listed[name] = true
		if c := t.Column(name); c != nil && c.Generation != nil && c.Policy != catalog.Plain {
			return nil, GeneratedWriteError(name, false)
		}
		ua := UnnestArray{Param: int(pr.Number), name: name, arg: a}
		if c := t.Column(name); c != nil && c.Policy != catalog.Plain {
			ua.Column = c
			holes = append(holes, Hole{Column: c, Param: ua.Param})
		} else {
			rest = append(rest, a.ProtoReflect())
		}
		p.Arrays = append(p.Arrays, ua)
	}
	for i := range t.Columns {
		if c := &t.Columns[i]; c.Policy != catalog.Plain && (HasDefault(c) || c.Generation != nil) && !listed[c.Name] {
			p.Defaults = append(p.Defaults, c)
		}
	}
	qualifier := ins.Relation.Relname
	if ins.Relation.Alias != nil {
		qualifier = ins.Relation.Alias.Aliasname
	}
	p.base = &pg_query.InsertStmt{Relation: ins.Relation, Override: ins.Override}
	if oc := ins.OnConflictClause; oc != nil {
		out := &pg_query.OnConflictClause{Action: oc.Action, Location: oc.Location}
		if oc.Infer != nil {
			infer, err := insertConflictTarget(oc.Infer, t, qualifier)
			if err != nil {
				return nil, err
			}
			out.Infer = infer
		}
		if oc.Action == pg_query.OnConflictAction_ONCONFLICT_UPDATE {
			// Django's bulk_create(update_conflicts=True): SET enc =
			// EXCLUDED.enc copies the cells; plain columns any
			// expression not touching encrypted ones.
			rows := []string{qualifier, "excluded"}
			items, setHoles, err := dmlPlanSet(oc.TargetList, t, dmlSetContext{statement: "ON CONFLICT DO UPDATE", rows: rows, excluded: true})
			if err != nil {
				return nil, err
			}
			if len(setHoles) > 0 {
				return nil, Refusal("ON CONFLICT DO UPDATE SET <encrypted column> = <value> in a bulk INSERT ... SELECT * FROM UNNEST of array parameters into table %s is not supported yet: use EXCLUDED.<column>", t.Name)
			}
			if err := dmlFindRef(oc.WhereClause, t, rows).clauseRefusal(t.Name, "ON CONFLICT DO UPDATE WHERE"); err != nil {
				return nil, err
			}
			out.TargetList, out.WhereClause = dmlRenderSet(items, nil, nil), oc.WhereClause
		}
		p.base.OnConflictClause = out
	}
	returning, proj, err := dmlReturning(ins.ReturningList, t, qualifier, false)
	if err != nil {
		return nil, err
	}
	p.Returning, p.base.ReturningList = proj, returning
	rest = append(rest, p.base.ProtoReflect())
	if err := dmlCheckParams(holes, t.Name, rest...); err != nil {
		return nil, err
	}
	return p, nil
}

// UnnestCells returns the cells of encrypted column c that a bulk INSERT
// fills, in the order Render takes their arrays: the layout without the
// salt override (new rows use their row's salt).
func UnnestCells(c *catalog.Column) ([]onion.PhysicalColumn, error) {
	_, layout, err := columnLayout(c)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(layout, func(pc onion.PhysicalColumn) bool { return pc.Suffix == SaltSuffix }), nil
}

// Render returns the server statement. salts is the node of the bytea[]
// of the rows' salts; cells[c] the nodes of the arrays of encrypted
// column c's cells (of each Arrays column and each Defaults column), by
// suffix, each an array of the cell's type (text[] for "_srch").
func (p *UnnestPlan) Render(salts *pg_query.Node, cells map[*catalog.Column]Cells) (string, error) {
	var cols, targets, aliases []string
	var args []*pg_query.Node
	add := func(col string, arg *pg_query.Node, cast string) {
		alias := fmt.Sprintf("c%d", len(aliases))
		cols = append(cols, col)
		aliases = append(aliases, alias)
		target := "pgonion_u." + alias
		if cast != "" {
			target += "::" + cast
		}
		targets = append(targets, target)
		args = append(args, arg)
	}
	add(SaltColumn, typeCast(salts, "bytea", true), "")
	encrypted := func(c *catalog.Column) error {
		layout, err := UnnestCells(c)
		if err != nil {
			return err
		}
		for _, pc := range layout {
			n := cells[c][pc.Suffix]
			if n == nil {
				return fmt.Errorf("rewrite: bulk INSERT into %s: no array for cell %s", p.Table.Name, pc.Name)
			}
			switch pc.Suffix {
			case "_srch":
				add(pc.Name, typeCast(n, "text", true), "bigint[]")
			default:
				add(pc.Name, typeCast(n, pc.SQLType, true), "")
			}
		}
		return nil
	}
	for _, a := range p.Arrays {
		if a.Column == nil {
			add(a.name, a.arg, "")
			continue
		}
		if err := encrypted(a.Column); err != nil {
			return "", err
		}
	}
	for _, c := range p.Defaults {
		if err := encrypted(c); err != nil {
			return "", err
		}
	}
	sts, err := Parse("SELECT " + strings.Join(targets, ", ") + " FROM unnest() AS pgonion_u(" + strings.Join(aliases, ", ") + ")")
	if err != nil || len(sts) != 1 {
		return "", fmt.Errorf("rewrite: bulk INSERT into %s: building the SELECT: %v", p.Table.Name, err)
	}
	sel := sts[0].Tree.Stmt.GetSelectStmt()
	sel.FromClause[0].GetRangeFunction().Functions[0].GetList().Items[0].GetFuncCall().Args = args
	ins := &pg_query.InsertStmt{
		Relation:         p.base.Relation,
		SelectStmt:       &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: sel}},
		OnConflictClause: p.base.OnConflictClause,
		ReturningList:    p.base.ReturningList,
		Override:         p.base.Override,
	}
	for _, c := range cols {
		ins.Cols = append(ins.Cols, pg_query.MakeResTargetNodeWithName(c, -1))
	}
	sql, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_InsertStmt{InsertStmt: ins}}, p.version)
	if err != nil {
		return "", fmt.Errorf("rewrite: deparsing the bulk INSERT into %s: %w", p.Table.Name, err)
	}
	return sql, nil
}
