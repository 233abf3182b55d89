package rewrite

import (
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/pgcopy"
)

// CopyField is one field of each row of the client's COPY data, in the
// client's order.
type CopyField struct {
	// Name is the column the field fills, as the client listed it (or the
	// table's column, when the statement lists none).
	Name string
	// Column is the encrypted column the field fills; nil for a plain
	// column (or a name the table does not have, which the server then
	// reports), whose field goes to the server as it is.
	Column *catalog.Column
	// Suffixes name the cells of an encrypted field
	// (onion.PhysicalColumn.Suffix: "_eq", "_ord", "_add", "_srch",
	// "_val"), in the order of their columns in CopyPlan.SQL. A new row's
	// cells use the row salt, so the salt override column ("_salt") is
	// not among them and stays NULL. "_srch" is bigint[], the rest bytea.
	Suffixes []string
}

// CopyPlan is the rewritten form of COPY t [(columns)] FROM STDIN on a
// table with encrypted columns. The proxy reads the client's rows with a
// pgcopy.Reader (Options, Columns), and writes each to the server with a
// pgcopy.Writer: a fresh salt, then per field in order either the field
// as it is (plain) or its cells (encrypted, Suffixes).
type CopyPlan struct {
	// SQL is the COPY the server runs: COPY t (pgonion_salt, <per field:
	// its column, or the cells of its encrypted column>) FROM STDIN, in
	// the default text format or, when Binary, FORMAT binary, with
	// FREEZE and the WHERE clause (over plain columns only) when the
	// client gave them.
	SQL string
	// Binary is set when every field is an encrypted column: the server's
	// rows are all cells (bytea, uuid, bigint[]) the proxy writes in
	// binary form, which the server stores without parsing text. A plain
	// field is sent as the client wrote it, so in text.
	Binary bool
	// Options say how the client's data reads.
	Options pgcopy.Options
	// Fields describe the client's fields, in order.
	Fields []CopyField
	// Table is the catalog table.
	Table *catalog.Table
}

// Columns returns the names of the fields, for pgcopy.NewReader.
func (p *CopyPlan) Columns() []string {
	out := make([]string, len(p.Fields))
	for i, f := range p.Fields {
		out[i] = f.Name
	}
	return out
}

// ServerColumns returns how many columns the server's COPY has (the
// column count of its CopyInResponse): the salt, plus one per plain field
// and one per cell of each encrypted field.
func (p *CopyPlan) ServerColumns() int {
	n := 1
	for _, f := range p.Fields {
		if f.Column == nil {
			n++
		} else {
			n += len(f.Suffixes)
		}
	}
	return n
}

// PlanCopy rewrites COPY t FROM STDIN (COPY ... TO is PlanCopyOut's).
// It returns a nil plan when the statement goes to the server unchanged:
// when t has no encrypted column.
//
// Refused (SQLSTATE 0A000, naming the table and an encrypted column):
//   - COPY t FROM a server-side file or PROGRAM: the server would read the
//     plaintext itself and store it unencrypted;
//   - FORMAT binary: the proxy decodes each value to encrypt it, and only
//     reads text and csv;
//   - a WHERE clause over an encrypted column: the server cannot evaluate
//     it over ciphertexts;
//   - the options pgcopy.ParseOptions refuses (an ENCODING other than
//     UTF8, DEFAULT, ON_ERROR, LOG_VERBOSITY).
//
// Invalid options and column lists are errors with the server's SQLSTATE
// and message, as the server would have reported them.
func PlanCopy(st Statement, t *catalog.Table) (*CopyPlan, error) {
	cs := st.Tree.Stmt.GetCopyStmt()
	if cs == nil {
		return nil, fmt.Errorf("rewrite: not a COPY statement")
	}
	enc := copyFirstEncrypted(t)
	if enc == nil {
		return nil, nil
	}
	where := "STDOUT"
	if cs.IsProgram {
		where = "PROGRAM"
	} else if cs.Filename != "" {
		where = "a server-side file"
	}
	if !cs.IsFrom {
		return nil, fmt.Errorf("rewrite: COPY ... TO is planned by PlanCopyOut")
	}
	switch {
	case cs.IsProgram || cs.Filename != "":
		return nil, Refusal("COPY %s FROM %s on a table with encrypted columns (%s.%s) is not supported: the server would read the plaintext itself and store it unencrypted; use COPY ... FROM STDIN (psql's \\copy) through the proxy", t.Name, where, t.Name, enc.Name)
	}
	if copyFormat(cs.Options) == "binary" {
		return nil, Refusal("COPY %s FROM STDIN with FORMAT binary on a table with encrypted columns (%s.%s) is not supported: the proxy must read each value to encrypt it; use text or csv", t.Name, t.Name, enc.Name)
	}
	o, err := pgcopy.ParseOptions(cs.Options)
	if err != nil {
		return nil, err
	}
	p := &CopyPlan{Options: o, Table: t}
	// The fields: the listed columns, or all in table order.
	names := stringList(cs.Attlist)
	if len(names) == 0 {
		for _, c := range t.Columns {
			names = append(names, c.Name)
		}
	}
	if cs.IsFrom {
		for _, c := range t.Columns {
			if c.Policy != catalog.Plain && c.Generation != nil {
				return nil, Refusal("COPY %s FROM STDIN is not supported: the proxy computes its generated column %s from each row's values, which it does not do for COPY yet; use INSERT", t.Name, c.Name)
			}
			if c.Policy != catalog.Plain && HasDefault(&c) && !slices.Contains(names, c.Name) {
				return nil, Refusal("COPY %s FROM STDIN without encrypted column %s.%s, which has a DEFAULT, is not supported yet: list the column and send its values", t.Name, t.Name, c.Name)
			}
		}
	}
	attlist := []*pg_query.Node{pg_query.MakeStrNode(SaltColumn)}
	for i, name := range names {
		if slices.Contains(names[:i], name) {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42701", Message: fmt.Sprintf("column \"%s\" specified more than once", name)}
		}
		c := t.Column(name)
		if c == nil || c.Policy == catalog.Plain {
			// A plain column, or one the server will report as unknown.
			p.Fields = append(p.Fields, CopyField{Name: name})
			attlist = append(attlist, pg_query.MakeStrNode(name))
			continue
		}
		_, layout, err := columnLayout(c)
		if err != nil {
			return nil, err
		}
		f := CopyField{Name: name, Column: c}
		for _, pc := range layout {
			if pc.Suffix == SaltSuffix {
				continue
			}
			f.Suffixes = append(f.Suffixes, pc.Suffix)
			attlist = append(attlist, pg_query.MakeStrNode(pc.Name))
		}
		p.Fields = append(p.Fields, f)
	}
	if err := copyCheckForced(o, t, names); err != nil {
		return nil, err
	}
	if cs.WhereClause != nil {
		if err := copyCheckWhere(cs.WhereClause, t); err != nil {
			return nil, err
		}
	}
	// The server's statement: same table and WHERE, the physical columns,
	// the default text format.
	out := proto.Clone(cs).(*pg_query.CopyStmt)
	if t.Physical != "" {
		out.Relation.Relname = t.Physical
	}
	out.Attlist = attlist
	out.Options = o.ServerOptions()
	p.Binary = true
	for _, f := range p.Fields {
		if f.Column == nil {
			p.Binary = false
		}
	}
	if p.Binary {
		out.Options = append(out.Options, pg_query.MakeSimpleDefElemNode("format", pg_query.MakeStrNode("binary"), -1))
	}
	server := Statement{Tree: &pg_query.RawStmt{Stmt: &pg_query.Node{Node: &pg_query.Node_CopyStmt{CopyStmt: out}}}, version: st.version}
	if p.SQL, err = server.Deparse(); err != nil {
		return nil, fmt.Errorf("rewrite: deparsing COPY %s: %w", t.Name, err)
	}
	return p, nil
}

// copyFirstEncrypted returns the first encrypted column of t, nil when it
// has none.
func copyFirstEncrypted(t *catalog.Table) *catalog.Column {
	for i := range t.Columns {
		if t.Columns[i].Policy != catalog.Plain {
			return &t.Columns[i]
		}
	}
	return nil
}

// copyPlainOnly reports whether a COPY column list names only plain
// columns of t (an empty list names them all).
func copyPlainOnly(attlist []*pg_query.Node, t *catalog.Table) bool {
	if len(attlist) == 0 {
		return false
	}
	for _, name := range stringList(attlist) {
		if c := t.Column(name); c != nil && c.Policy != catalog.Plain {
			return false
		}
	}
	return true
}

// copyFormat returns the FORMAT option as written, "" when absent (also
// the legacy BINARY keyword, which the parser makes a FORMAT option).
func copyFormat(options []*pg_query.Node) string {
	for _, n := range options {
		if d := n.GetDefElem(); d != nil && d.Defname == "format" {
			return d.Arg.GetString_().GetSval()
		}
	}
	return ""
}

// copyCheckForced checks that the columns of FORCE_NOT_NULL and
// FORCE_NULL exist and are among the COPY's, as the server would.
func copyCheckForced(o pgcopy.Options, t *catalog.Table, names []string) error {
	for _, forced := range []struct {
		option string
		cols   []string
	}{{"FORCE_NOT_NULL", o.ForceNotNull}, {"FORCE_NULL", o.ForceNull}} {
		for _, c := range forced.cols {
			if t.Column(c) == nil {
				return &pgconn.PgError{Severity: "ERROR", Code: "42703", Message: fmt.Sprintf("column \"%s\" of relation \"%s\" does not exist", c, t.Name)}
			}
			if !slices.Contains(names, c) {
				return &pgconn.PgError{Severity: "ERROR", Code: "42P10", Message: fmt.Sprintf("%s column \"%s\" not referenced by COPY", forced.option, c)}
			}
		}
	}
	return nil
}

// copyCheckWhere checks the WHERE clause of COPY FROM: it runs on the
// server, so it may use plain columns only. Names the logical table does
// not have (such as its physical columns) are the error PostgreSQL gives
// for unknown columns.
func copyCheckWhere(where *pg_query.Node, t *catalog.Table) error {
	var err error
	walkColumnRefs(where.ProtoReflect(), func(name string) {
		if err != nil {
			return
		}
		switch c := t.Column(name); {
		case c == nil:
			err = &pgconn.PgError{Severity: "ERROR", Code: "42703", Message: fmt.Sprintf("column \"%s\" does not exist", name)}
		case c.Policy != catalog.Plain:
			err = Refusal("COPY %s FROM STDIN WHERE over encrypted column %s.%s is not supported: the server cannot evaluate it over ciphertexts", t.Name, t.Name, name)
		}
	})
	return err
}
