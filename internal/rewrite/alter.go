package rewrite

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// AlterPlan is the rewritten form of an ALTER TABLE statement.
type AlterPlan struct {
	// SQL is what to run on the server: one statement, or several
	// separated by "; " (RENAME COLUMN of an encrypted column renames each
	// of its physical columns, one ALTER TABLE each, since PostgreSQL
	// renames one column per statement). The statements must run in one
	// transaction together with the catalog change (a simple-protocol
	// query string of several statements is one implicit transaction).
	// When nothing needed rewriting, SQL is the client's statement text.
	SQL string
	// Table is the table as the catalog must record it afterwards (in the
	// same transaction as SQL, with catalog.UpdateTable), or nil when the
	// catalog does not change. It is a modified deep copy: the table given
	// to PlanAlter is never changed (it is shared by the catalog cache).
	// Columns added by the statement have a zero ID, which the catalog
	// fills in, and Position one more than the largest position so far
	// (positions of dropped columns are not reused).
	Table *catalog.Table
	// PeelEq lists the encrypted columns whose Eq onion must be peeled from
	// RND to DET before SQL can run: ADD PRIMARY KEY or UNIQUE over them
	// needs deterministic ciphertexts. The engine peels them (as for a
	// query) and plans the statement again.
	PeelEq []string
	// PlainForKeys lists the encrypted columns, under the default policy
	// (none declared), that ADD CONSTRAINT ... FOREIGN KEY names as its
	// referencing columns: a foreign key is enforced by the server on
	// equal values, so they must be stored plain first (the rule of
	// CREATE TABLE, applied late because ORMs add their foreign keys
	// after creating the tables). The engine checks that they reference
	// plain columns, stores them plain (on an empty table) and plans the
	// statement again. References and Referenced name what they point at.
	PlainForKeys []string
	References   *Relation
	Referenced   []string
}

// ddlMaxIdentifier is the longest identifier PostgreSQL keeps
// (NAMEDATALEN-1 bytes); longer ones are truncated, with only a notice.
const ddlMaxIdentifier = 63

// PlanAlter plans an ALTER TABLE on the catalog table t. st is one of
//
//   - ALTER TABLE [IF EXISTS] [ONLY] t subcommand, ... (AlterTableStmt);
//   - ALTER TABLE [IF EXISTS] t RENAME [COLUMN] a TO b, RENAME CONSTRAINT
//     and RENAME TO u (RenameStmt);
//   - ALTER TABLE t SET SCHEMA s (AlterObjectSchemaStmt): always refused.
//
// Any other statement, or an ALTER of another kind of relation (ALTER
// INDEX, ALTER VIEW, ...), is an error (not a refusal): the caller routes
// only ALTER TABLE here. t must be the catalog table the statement names;
// when t is nil (a table the proxy does not manage) the statement passes
// through unchanged and Table is nil.
//
// What is supported, and why it is safe:
//
//   - ADD COLUMN [IF NOT EXISTS]: the column gets exactly what PlanCreate
//     would give it in CREATE TABLE (the same policy, capabilities, onions
//     and layers, the same physical columns, and the same refusals:
//     DEFAULT, serial, identity, generated, CHECK and REFERENCES on an
//     encrypted column are refused because the server would compute or
//     check plaintext; UNIQUE or PRIMARY KEY put its Eq onion at DET and
//     are enforced on column__eq). The new column is empty, so no existing
//     ciphertext changes. When the table had no encrypted column yet, the
//     per-row salt column is added too, with a fresh server-generated
//     random value (uuid_send(gen_random_uuid()), 16 bytes, the size of a
//     salt) for each existing row and no default afterwards (a second
//     ALTER TABLE drops it, so SQL is then two statements). Those rows'
//     encrypted cells are all NULL, and UPDATE writes cells with a salt of
//     its own (SaltSuffix), so those salts only need to be present, not
//     secret; rows inserted later get their salt from the proxy as usual.
//     A new plain column whose default, generated expression or
//     constraint refers to an encrypted column is refused: the server
//     cannot evaluate it over ciphertexts. The name pgonion_salt is
//     reserved.
//   - DROP COLUMN [IF EXISTS] ... [CASCADE|RESTRICT]: an encrypted column
//     drops every one of its physical columns (the row salt stays: other
//     columns, or a later one, use it). Dropping is always safe: it
//     reveals nothing.
//   - ALTER COLUMN c SET / DROP NOT NULL on an encrypted column applies to
//     c__eq, the onion that is always present and NULL exactly when the
//     value is NULL (as PlanCreate does for NOT NULL).
//   - RENAME COLUMN of an encrypted column renames each physical column;
//     its keys follow the column id, not its name, so no ciphertext
//     changes. RENAME TO renames the table (catalog Name and Physical).
//   - ADD CONSTRAINT UNIQUE / PRIMARY KEY over encrypted columns is
//     allowed only when each one's Eq onion is already at DET (declared
//     UNIQUE or PRIMARY KEY in CREATE TABLE, or peeled): it is then
//     enforced on column__eq, like PlanCreate does. On RND ciphertexts,
//     which differ for equal values, the server could not detect
//     duplicates, so it is refused: putting the Eq onion at DET is a
//     decision taken at CREATE TABLE.
//   - any subcommand that touches only plain columns passes as written
//     (ALTER COLUMN TYPE of a plain column updates its catalog type).
//
// Refused with Refusal (SQLSTATE 0A000, naming the construct and
// table.column), because the server would have to see, compute or check
// plaintext, or the proxy would have to re-encrypt every row:
// ALTER COLUMN TYPE, SET DEFAULT, DROP DEFAULT, identity and generated
// subcommands, SET STATISTICS/STORAGE/COMPRESSION/options on an encrypted
// column; ADD CONSTRAINT CHECK, FOREIGN KEY or EXCLUDE over an encrypted
// column (anywhere in it: keys, expression, INCLUDE); any subcommand whose
// expression (e.g. a plain column's USING) refers to an encrypted column;
// INHERIT and OF on a table with encrypted columns (another table's
// queries would read its ciphertexts with the wrong column keys); any
// subcommand naming a physical column (pgonion_salt, c__eq, ...), which
// is the proxy's storage and not part of the client's schema (dropping
// pgonion_salt would make every encrypted value undecryptable); and SET
// SCHEMA of a catalog table (the catalog names tables by schema and does
// not follow such moves). (Long encrypted column names get shortened
// physical names: physicalPrefix.)
//
// ADD COLUMN or RENAME COLUMN to the name of an existing catalog column
// fails with PostgreSQL's own error (42701 duplicate_column): the server
// could not detect the clash itself, since an encrypted column c exists
// there only as c__eq, ....
//
// Several subcommands in one statement are handled in order against the
// evolving table, so ADD COLUMN c, ALTER COLUMN c SET NOT NULL works.
func PlanAlter(st Statement, t *catalog.Table, policy PolicyFunc) (*AlterPlan, error) {
	return PlanAlterWith(st, t, policy, nil)
}

// PlanAlterWith is PlanAlter, with types the domains and enums that
// added columns' types name (nil: none known; see PlanCreateWith).
func PlanAlterWith(st Statement, t *catalog.Table, policy PolicyFunc, types TypeLookup) (*AlterPlan, error) {
	stmt := st.Tree.GetStmt()
	switch {
	case stmt.GetAlterTableStmt() != nil:
		at := stmt.GetAlterTableStmt()
		if at.Objtype != pg_query.ObjectType_OBJECT_TABLE {
			return nil, fmt.Errorf("rewrite: PlanAlter: not an ALTER TABLE statement (object type %s)", at.Objtype)
		}
		if t == nil {
			return &AlterPlan{SQL: st.SQL}, nil
		}
		if err := ddlCheckRelation(at.Relation, t); err != nil {
			return nil, err
		}
		return ddlPlanAlterTable(st, at, t, policy, types)
	case stmt.GetRenameStmt() != nil:
		rs := stmt.GetRenameStmt()
		switch {
		case rs.RenameType == pg_query.ObjectType_OBJECT_TABLE,
			rs.RenameType == pg_query.ObjectType_OBJECT_TABCONSTRAINT, // only ALTER TABLE has it
			rs.RenameType == pg_query.ObjectType_OBJECT_COLUMN && rs.RelationType == pg_query.ObjectType_OBJECT_TABLE:
		default:
			return nil, fmt.Errorf("rewrite: PlanAlter: not an ALTER TABLE ... RENAME statement (renames a %s)", rs.RenameType)
		}
		if t == nil {
			return &AlterPlan{SQL: st.SQL}, nil
		}
		if err := ddlCheckRelation(rs.Relation, t); err != nil {
			return nil, err
		}
		return ddlPlanRename(st, rs, t)
	case stmt.GetAlterObjectSchemaStmt() != nil:
		as := stmt.GetAlterObjectSchemaStmt()
		if as.ObjectType != pg_query.ObjectType_OBJECT_TABLE {
			return nil, fmt.Errorf("rewrite: PlanAlter: not an ALTER TABLE ... SET SCHEMA statement (object type %s)", as.ObjectType)
		}
		if t == nil {
			return &AlterPlan{SQL: st.SQL}, nil
		}
		if err := ddlCheckRelation(as.Relation, t); err != nil {
			return nil, err
		}
		return nil, Refusal("ALTER TABLE %s SET SCHEMA is not supported by the proxy: its catalog names the table by schema; create the table in the other schema through the proxy and copy the rows", t.Name)
	}
	return nil, fmt.Errorf("rewrite: PlanAlter: not an ALTER TABLE statement (%s)", st.Kind)
}

// ddlCheckRelation checks that a statement's target is the catalog table t
// (the caller looked it up; a mismatch is a bug, not a client error).
func ddlCheckRelation(rv *pg_query.RangeVar, t *catalog.Table) error {
	if rv == nil || rv.Relname != t.Name || (rv.Schemaname != "" && rv.Schemaname != t.Schema) {
		var name string
		if rv != nil {
			name = strings.TrimPrefix(rv.Schemaname+"."+rv.Relname, ".")
		}
		return fmt.Errorf("rewrite: the statement is about table %q, not the catalog table %s.%s", name, t.Schema, t.Name)
	}
	return nil
}

// ddlCopyTable returns a deep copy of t: the columns and their maps and
// slices are fresh, so changing the copy never changes t.
func ddlCopyTable(t *catalog.Table) *catalog.Table {
	nt := *t
	nt.Columns = make([]catalog.Column, len(t.Columns))
	for i, c := range t.Columns {
		c.Capabilities = slices.Clone(c.Capabilities)
		c.Onions = maps.Clone(c.Onions)
		nt.Columns[i] = c
	}
	return &nt
}

// ddlDuplicateColumn is PostgreSQL's own error for a column that exists.
func ddlDuplicateColumn(table, column string) error {
	return &pgconn.PgError{Severity: "ERROR", Code: "42701",
		Message: fmt.Sprintf("column %q of relation %q already exists", column, table)}
}

// ddlHasEncrypted reports whether t has an encrypted column.
func ddlHasEncrypted(t *catalog.Table) bool {
	for i := range t.Columns {
		if t.Columns[i].Policy != catalog.Plain {
			return true
		}
	}
	return false
}

// ddlEncryptedColumns maps each encrypted column of t by name.
func ddlEncryptedColumns(t *catalog.Table) map[string]*catalog.Column {
	out := map[string]*catalog.Column{}
	for i := range t.Columns {
		if t.Columns[i].Policy != catalog.Plain {
			out[t.Columns[i].Name] = &t.Columns[i]
		}
	}
	return out
}

// ddlPhysicalOwner tells whether name is a physical column of t's
// storage rather than a logical column: the row salt ("" owner, true) or a
// physical column of an encrypted column (its name, true).
func ddlPhysicalOwner(t *catalog.Table, name string) (string, bool, error) {
	if name == SaltColumn {
		return "", true, nil
	}
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.Policy == catalog.Plain || !strings.HasPrefix(name, physicalPrefix(c.Name)) {
			continue
		}
		_, layout, err := columnLayout(c)
		if err != nil {
			return "", false, err
		}
		for _, pc := range layout {
			if pc.Name == name {
				return c.Name, true, nil
			}
		}
	}
	return "", false, nil
}

// ddlRefusePhysical refuses a subcommand that names a physical column.
func ddlRefusePhysical(t *catalog.Table, what, name string) error {
	owner, ok, err := ddlPhysicalOwner(t, name)
	if err != nil || !ok {
		return err
	}
	if owner == "" {
		return Refusal("%s of column %s.%s: it holds the per-row salt of the table's encrypted columns and is managed by the proxy", what, t.Name, name)
	}
	return Refusal("%s of column %s.%s: it is part of the storage of encrypted column %s.%s and is managed by the proxy", what, t.Name, name, t.Name, owner)
}

// ddlEncryptedRefs returns the encrypted columns of enc that a parse
// subtree refers to (column references, and index or EXCLUDE elements),
// in order of appearance.
func ddlEncryptedRefs(n proto.Message, enc map[string]*catalog.Column) []string {
	var out []string
	if n == nil {
		return nil
	}
	walkColumnRefs(n.ProtoReflect(), func(name string) {
		if enc[name] != nil && !slices.Contains(out, name) {
			out = append(out, name)
		}
	})
	return out
}

// ddlSubcommandName names an ALTER TABLE subcommand in messages.
func ddlSubcommandName(cmd *pg_query.AlterTableCmd) string {
	switch cmd.Subtype {
	case pg_query.AlterTableType_AT_AddColumn:
		return "ADD COLUMN"
	case pg_query.AlterTableType_AT_DropColumn:
		return "DROP COLUMN"
	case pg_query.AlterTableType_AT_ColumnDefault:
		if cmd.Def == nil {
			return "ALTER COLUMN DROP DEFAULT"
		}
		return "ALTER COLUMN SET DEFAULT"
	case pg_query.AlterTableType_AT_DropNotNull:
		return "ALTER COLUMN DROP NOT NULL"
	case pg_query.AlterTableType_AT_SetNotNull:
		return "ALTER COLUMN SET NOT NULL"
	case pg_query.AlterTableType_AT_SetExpression:
		return "ALTER COLUMN SET EXPRESSION"
	case pg_query.AlterTableType_AT_DropExpression:
		return "ALTER COLUMN DROP EXPRESSION"
	case pg_query.AlterTableType_AT_SetStatistics:
		return "ALTER COLUMN SET STATISTICS"
	case pg_query.AlterTableType_AT_SetOptions:
		return "ALTER COLUMN SET (options)"
	case pg_query.AlterTableType_AT_ResetOptions:
		return "ALTER COLUMN RESET (options)"
	case pg_query.AlterTableType_AT_SetStorage:
		return "ALTER COLUMN SET STORAGE"
	case pg_query.AlterTableType_AT_SetCompression:
		return "ALTER COLUMN SET COMPRESSION"
	case pg_query.AlterTableType_AT_AlterColumnType:
		return "ALTER COLUMN TYPE"
	case pg_query.AlterTableType_AT_AlterColumnGenericOptions:
		return "ALTER COLUMN OPTIONS"
	case pg_query.AlterTableType_AT_AddIdentity:
		return "ALTER COLUMN ADD GENERATED AS IDENTITY"
	case pg_query.AlterTableType_AT_SetIdentity:
		return "ALTER COLUMN SET (identity option)"
	case pg_query.AlterTableType_AT_DropIdentity:
		return "ALTER COLUMN DROP IDENTITY"
	case pg_query.AlterTableType_AT_AddConstraint:
		return "ADD CONSTRAINT"
	case pg_query.AlterTableType_AT_AddInherit:
		return "INHERIT"
	case pg_query.AlterTableType_AT_AddOf:
		return "OF"
	}
	return strings.ReplaceAll(strings.TrimPrefix(cmd.Subtype.String(), "AT_"), "_", " ")
}

// ddlColumnSubcommand reports whether an ALTER TABLE subcommand's Name is
// a column (and not a constraint, trigger, index or rule name).
func ddlColumnSubcommand(t pg_query.AlterTableType) bool {
	switch t {
	case pg_query.AlterTableType_AT_ColumnDefault, pg_query.AlterTableType_AT_CookedColumnDefault,
		pg_query.AlterTableType_AT_DropNotNull, pg_query.AlterTableType_AT_SetNotNull,
		pg_query.AlterTableType_AT_SetExpression, pg_query.AlterTableType_AT_DropExpression,
		pg_query.AlterTableType_AT_CheckNotNull, pg_query.AlterTableType_AT_SetStatistics,
		pg_query.AlterTableType_AT_SetOptions, pg_query.AlterTableType_AT_ResetOptions,
		pg_query.AlterTableType_AT_SetStorage, pg_query.AlterTableType_AT_SetCompression,
		pg_query.AlterTableType_AT_DropColumn, pg_query.AlterTableType_AT_AlterColumnType,
		pg_query.AlterTableType_AT_AlterColumnGenericOptions, pg_query.AlterTableType_AT_AddIdentity,
		pg_query.AlterTableType_AT_SetIdentity, pg_query.AlterTableType_AT_DropIdentity:
		return true
	}
	return false
}

// ddlAlter is the state of one ALTER TABLE being planned.
type ddlAlter struct {
	orig   *catalog.Table
	nt     *catalog.Table // the evolving copy
	policy PolicyFunc
	types  TypeLookup
	// plainFK, fkTable and fkColumns: AlterPlan.PlainForKeys and what
	// its foreign key references.
	plainFK   []string
	fkTable   *Relation
	fkColumns []string
	version   int32 // parse tree format, to build statements
	changed   bool  // nt differs from orig
	rewritten bool  // the subcommands differ from the client's
	saltAdded bool
	peel      []string         // Eq onions to peel to DET first
	out       []*pg_query.Node // the subcommands of the statement
	after     []*pg_query.Node // those of a second ALTER TABLE, if any
}

func ddlPlanAlterTable(st Statement, at *pg_query.AlterTableStmt, t *catalog.Table, policy PolicyFunc, types TypeLookup) (*AlterPlan, error) {
	a := &ddlAlter{orig: t, nt: ddlCopyTable(t), policy: policy, types: types, version: st.version}
	for _, n := range at.Cmds {
		cmd := n.GetAlterTableCmd()
		if cmd == nil {
			return nil, fmt.Errorf("rewrite: ALTER TABLE %s: unexpected subcommand node", t.Name)
		}
		if err := a.subcommand(n, cmd); err != nil {
			return nil, err
		}
	}
	plan := &AlterPlan{SQL: st.SQL, PeelEq: a.peel, PlainForKeys: a.plainFK, References: a.fkTable, Referenced: a.fkColumns}
	if a.changed {
		plan.Table = a.nt
	}
	if a.rewritten {
		var stmts []string
		for _, cmds := range [][]*pg_query.Node{a.out, a.after} {
			if len(cmds) == 0 {
				continue
			}
			stmt := proto.Clone(at).(*pg_query.AlterTableStmt)
			stmt.Cmds = cmds
			sql, err := ddlDeparse(a.version, &pg_query.Node{Node: &pg_query.Node_AlterTableStmt{AlterTableStmt: stmt}})
			if err != nil {
				return nil, fmt.Errorf("rewrite: deparsing ALTER TABLE %s: %w", t.Name, err)
			}
			stmts = append(stmts, sql)
		}
		plan.SQL = strings.Join(stmts, "; ")
	}
	return plan, nil
}

// ddlDeparse returns the SQL text of one statement node.
func ddlDeparse(version int32, n *pg_query.Node) (string, error) {
	return Statement{Tree: &pg_query.RawStmt{Stmt: n}, version: version}.Deparse()
}

// ddlCmd wraps an ALTER TABLE subcommand in a node.
func ddlCmd(cmd *pg_query.AlterTableCmd) *pg_query.Node {
	return &pg_query.Node{Node: &pg_query.Node_AlterTableCmd{AlterTableCmd: cmd}}
}

// keep passes the client's subcommand unchanged.
func (a *ddlAlter) keep(n *pg_query.Node) { a.out = append(a.out, n) }

// emit adds subcommands of the proxy's making.
func (a *ddlAlter) emit(cmds ...*pg_query.AlterTableCmd) {
	for _, c := range cmds {
		a.out = append(a.out, ddlCmd(c))
	}
	a.rewritten = true
}

func (a *ddlAlter) subcommand(n *pg_query.Node, cmd *pg_query.AlterTableCmd) error {
	table := a.nt.Name
	enc := ddlEncryptedColumns(a.nt)
	what := ddlSubcommandName(cmd)
	switch cmd.Subtype {
	case pg_query.AlterTableType_AT_AddColumn:
		return a.addColumn(n, cmd)
	case pg_query.AlterTableType_AT_AddConstraint:
		return a.addConstraint(n, cmd, enc)
	case pg_query.AlterTableType_AT_AddInherit, pg_query.AlterTableType_AT_AddOf:
		if len(enc) > 0 {
			return Refusal("%s on table %s with encrypted columns is not supported: the rows of one table would be read with the column keys of another", what, table)
		}
		a.keep(n)
		return nil
	}
	if !ddlColumnSubcommand(cmd.Subtype) {
		// Table-level subcommands (owner, triggers, options, constraints
		// by name, ...) name no column; refuse only if an expression of
		// theirs does.
		if refs := ddlEncryptedRefs(cmd.Def, enc); len(refs) > 0 {
			return Refusal("%s referring to encrypted column %s.%s is not supported", what, table, refs[0])
		}
		a.keep(n)
		return nil
	}
	if err := ddlRefusePhysical(a.nt, what, cmd.Name); err != nil {
		return err
	}
	col := a.nt.Column(cmd.Name)
	if col == nil || col.Policy == catalog.Plain {
		// A plain column, or one the catalog does not know (the server
		// reports it as usual). Its expressions must not need an
		// encrypted column's plaintext.
		if refs := ddlEncryptedRefs(cmd.Def, enc); len(refs) > 0 {
			return Refusal("%s of column %s.%s refers to encrypted column %s.%s, which the server holds only as ciphertexts", what, table, cmd.Name, table, refs[0])
		}
		if col != nil {
			switch cmd.Subtype {
			case pg_query.AlterTableType_AT_DropColumn:
				a.dropCatalogColumn(col.Name)
			case pg_query.AlterTableType_AT_AlterColumnType:
				if cd := cmd.Def.GetColumnDef(); cd != nil && cd.TypeName != nil {
					col.Type = deparseType(cd.TypeName)
					a.changed = true
				}
			}
		}
		a.keep(n)
		return nil
	}
	// An encrypted column.
	switch cmd.Subtype {
	case pg_query.AlterTableType_AT_DropColumn:
		if g := readByGeneration(a.nt, col); g != nil {
			return &pgconn.PgError{Severity: "ERROR", Code: "2BP01", Message: fmt.Sprintf("cannot drop column %s of table %s because other objects depend on it", col.Name, table),
				Detail: fmt.Sprintf("column %s of table %s depends on column %s of table %s", g.Name, table, col.Name, table), Hint: "Drop the generated column first."}
		}
		_, layout, err := columnLayout(col)
		if err != nil {
			return err
		}
		for _, pc := range layout {
			a.emit(&pg_query.AlterTableCmd{Subtype: cmd.Subtype, Name: pc.Name, Behavior: cmd.Behavior, MissingOk: cmd.MissingOk})
		}
		a.dropCatalogColumn(col.Name)
		return nil
	case pg_query.AlterTableType_AT_SetNotNull, pg_query.AlterTableType_AT_DropNotNull:
		if _, hasAdd := col.Onions[string(onion.KindAdd)]; hasAdd {
			// NOT NULL of a column with an Add onion is NotNullCheck (an
			// increment leaves the Eq cell NULL).
			drop := &pg_query.AlterTableCmd{Subtype: pg_query.AlterTableType_AT_DropConstraint, Name: NotNullCheckName(col.Name), MissingOk: true, Behavior: pg_query.DropBehavior_DROP_RESTRICT}
			eq := &pg_query.AlterTableCmd{Subtype: pg_query.AlterTableType_AT_DropNotNull, Name: EqColumn(col.Name)}
			a.emit(drop)
			a.emit(eq)
			if cmd.Subtype == pg_query.AlterTableType_AT_SetNotNull {
				a.emit(&pg_query.AlterTableCmd{Subtype: pg_query.AlterTableType_AT_AddConstraint, Def: NotNullCheck(col.Name)})
			}
			return nil
		}
		c := proto.Clone(cmd).(*pg_query.AlterTableCmd)
		c.Name = EqColumn(col.Name)
		a.emit(c)
		return nil
	case pg_query.AlterTableType_AT_AlterColumnType:
		return Refusal("%s on encrypted column %s.%s is not supported: every value would have to be re-encrypted for the new type; add a new column, copy the values through the proxy and drop this one", what, table, col.Name)
	case pg_query.AlterTableType_AT_ColumnDefault:
		if col.Generation != nil {
			return &pgconn.PgError{Severity: "ERROR", Code: "42P16", Message: fmt.Sprintf("column %q of relation %q is a generated column", col.Name, table)}
		}
		// The proxy applies it (defaults.go): the catalog changes, the
		// server's table does not.
		if cmd.Def == nil {
			col.Default, col.DefaultExpr = nil, nil
		} else {
			typ, err := ColumnType(col)
			if err != nil {
				return err
			}
			if err := constantDefault(cmd.Def, col, typ, table, a.version); err != nil {
				return err
			}
		}
		a.changed, a.rewritten = true, true
		return nil
	case pg_query.AlterTableType_AT_CookedColumnDefault,
		pg_query.AlterTableType_AT_AddIdentity, pg_query.AlterTableType_AT_SetIdentity,
		pg_query.AlterTableType_AT_SetExpression:
		return Refusal("%s on encrypted column %s.%s: the server would compute the value in plaintext", what, table, col.Name)
	}
	return Refusal("%s on encrypted column %s.%s is not supported by the proxy", what, table, col.Name)
}

// dropCatalogColumn removes a column from the evolving table.
func (a *ddlAlter) dropCatalogColumn(name string) {
	a.nt.Columns = slices.DeleteFunc(a.nt.Columns, func(c catalog.Column) bool { return c.Name == name })
	a.changed = true
}

// addColumn plans ADD COLUMN by planning a one-column CREATE TABLE of the
// same table with PlanCreate, so that both decide alike.
func (a *ddlAlter) addColumn(n *pg_query.Node, cmd *pg_query.AlterTableCmd) error {
	table := a.nt.Name
	cd := cmd.Def.GetColumnDef()
	if cd == nil {
		return fmt.Errorf("rewrite: ALTER TABLE %s ADD COLUMN without a column definition", table)
	}
	if cd.Colname == SaltColumn {
		return Refusal("ADD COLUMN %s.%s: the name %s is reserved for the proxy's per-row salt", table, cd.Colname, SaltColumn)
	}
	if existing := a.nt.Column(cd.Colname); existing != nil {
		if !cmd.MissingOk {
			return ddlDuplicateColumn(table, cd.Colname)
		}
		// IF NOT EXISTS: the server must skip it, as it would the
		// logical column; for an encrypted one, ask it to add c__eq,
		// which exists, so that it skips with its usual notice.
		if existing.Policy == catalog.Plain {
			a.keep(n)
		} else {
			a.emit(&pg_query.AlterTableCmd{Subtype: cmd.Subtype, MissingOk: true,
				Def: columnDef(EqColumn(existing.Name), "bytea", false)})
		}
		return nil
	}
	if hasConstraint(cd, pg_query.ConstrType_CONSTR_GENERATED) && a.policy(a.nt.Schema+"."+table, cd.Colname).Policy != catalog.Plain {
		return Refusal("ADD COLUMN %s.%s GENERATED ALWAYS AS on an encrypted column is not supported: the proxy would have to compute it for every existing row; create the table with it, or declare the column plain", table, cd.Colname)
	}
	cs := &pg_query.CreateStmt{
		Relation:  &pg_query.RangeVar{Schemaname: a.nt.Schema, Relname: a.nt.Name, Inh: true, Relpersistence: "p"},
		TableElts: []*pg_query.Node{proto.Clone(cmd.Def).(*pg_query.Node)},
		Oncommit:  pg_query.OnCommitAction_ONCOMMIT_NOOP,
	}
	syn := Statement{Kind: "Create", Tree: &pg_query.RawStmt{Stmt: &pg_query.Node{Node: &pg_query.Node_CreateStmt{CreateStmt: cs}}}, version: a.version}
	cp, err := PlanCreateWith(syn, a.nt.Schema, a.policy, nil, a.types)
	if err != nil {
		return err
	}
	if len(cp.Table.Columns) != 1 {
		return fmt.Errorf("rewrite: ALTER TABLE %s ADD COLUMN %s: planned %d columns", table, cd.Colname, len(cp.Table.Columns))
	}
	col := cp.Table.Columns[0]
	if len(cp.ForeignKeys) > 0 {
		return Refusal("REFERENCES on encrypted column %s.%s is not supported in ADD COLUMN: add the column, then the key with ALTER TABLE ... ADD FOREIGN KEY", table, cd.Colname)
	}
	if len(cp.Table.Checks) > 0 {
		return Refusal("ADD COLUMN %s.%s with a CHECK constraint on an encrypted column is not supported: the proxy would have to check every existing row; create the table with it, or keep the column plain", table, cd.Colname)
	}
	if HasDefault(&col) {
		return Refusal("ADD COLUMN %s.%s with a DEFAULT on an encrypted column is not supported: every existing row would need the value encrypted; add the column without it, then set it with UPDATE through the proxy", table, cd.Colname)
	}
	col.Position = 1
	for _, c := range a.nt.Columns {
		col.Position = max(col.Position, c.Position+1)
	}
	if col.Policy == catalog.Plain {
		if refs := ddlEncryptedRefs(cd, ddlEncryptedColumns(a.nt)); len(refs) > 0 {
			return Refusal("ADD COLUMN %s.%s refers to encrypted column %s.%s (in a default, generated expression or constraint), which the server holds only as ciphertexts", table, cd.Colname, table, refs[0])
		}
		a.keep(n)
		a.nt.Columns = append(a.nt.Columns, col)
		a.changed = true
		return nil
	}
	if _, _, err := columnLayout(&col); err != nil {
		return err
	}
	if !ddlHasEncrypted(a.nt) && !a.saltAdded {
		add, dropDefault := ddlAddSalt()
		a.emit(add)
		a.after = append(a.after, ddlCmd(dropDefault))
		a.saltAdded = true
	}
	// PlanCreate's elements: the salt column and the column's physical
	// columns, then any UNIQUE / PRIMARY KEY moved to its Eq onion.
	for _, e := range cs.TableElts {
		switch {
		case e.GetColumnDef().GetColname() == SaltColumn:
		case e.GetColumnDef() != nil:
			a.emit(&pg_query.AlterTableCmd{Subtype: pg_query.AlterTableType_AT_AddColumn, Def: e, MissingOk: cmd.MissingOk, Behavior: cmd.Behavior})
		case e.GetConstraint() != nil:
			a.emit(&pg_query.AlterTableCmd{Subtype: pg_query.AlterTableType_AT_AddConstraint, Def: e, Behavior: cmd.Behavior})
		default:
			return fmt.Errorf("rewrite: ALTER TABLE %s ADD COLUMN %s: unexpected planned element", table, cd.Colname)
		}
	}
	a.nt.Columns = append(a.nt.Columns, col)
	a.changed = true
	return nil
}

// ddlAddSalt returns the subcommands that add the per-row salt column to
// a table that has rows but no salt column yet: add is ADD COLUMN IF NOT
// EXISTS with a volatile default, so each existing row gets 16 random
// bytes from the server; dropDefault, which must run in a second ALTER
// TABLE (PostgreSQL checks that the column exists before the first one
// adds it), removes the default at once, so every later row must get its
// salt from the proxy. If the column exists already (a table whose
// encrypted columns were all dropped), the server skips the ADD, and
// dropping its absent default does nothing.
func ddlAddSalt() (add, dropDefault *pg_query.AlterTableCmd) {
	def := saltColumnDef()
	uuid := &pg_query.FuncCall{Funcname: []*pg_query.Node{pg_query.MakeStrNode("gen_random_uuid")}, Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL, Location: -1}
	send := &pg_query.FuncCall{Funcname: []*pg_query.Node{pg_query.MakeStrNode("uuid_send")},
		Args: []*pg_query.Node{{Node: &pg_query.Node_FuncCall{FuncCall: uuid}}}, Funcformat: pg_query.CoercionForm_COERCE_EXPLICIT_CALL, Location: -1}
	def.GetColumnDef().Constraints = append(def.GetColumnDef().Constraints, &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: &pg_query.Constraint{
		Contype: pg_query.ConstrType_CONSTR_DEFAULT, RawExpr: &pg_query.Node{Node: &pg_query.Node_FuncCall{FuncCall: send}}, Location: -1}}})
	return &pg_query.AlterTableCmd{Subtype: pg_query.AlterTableType_AT_AddColumn, Def: def, MissingOk: true},
		&pg_query.AlterTableCmd{Subtype: pg_query.AlterTableType_AT_ColumnDefault, Name: SaltColumn}
}

// addConstraint plans ADD CONSTRAINT: over plain columns it passes;
// UNIQUE / PRIMARY KEY over encrypted columns whose Eq onion is at DET
// moves to their Eq onions; anything else over encrypted columns is
// refused.
func (a *ddlAlter) addConstraint(n *pg_query.Node, cmd *pg_query.AlterTableCmd, enc map[string]*catalog.Column) error {
	table := a.nt.Name
	c := cmd.Def.GetConstraint()
	if c == nil {
		return fmt.Errorf("rewrite: ALTER TABLE %s ADD CONSTRAINT without a constraint", table)
	}
	name := constraintName(c.Contype)
	if c.Contype == pg_query.ConstrType_CONSTR_PRIMARY {
		name = "PRIMARY KEY"
	}
	// Every column the constraint names: keys, INCLUDE, foreign key
	// columns, expressions and EXCLUDE elements, and the referenced
	// columns of a foreign key to this same table.
	var refs []string
	add := func(names ...string) {
		for _, s := range names {
			if enc[s] != nil && !slices.Contains(refs, s) {
				refs = append(refs, s)
			}
		}
	}
	add(stringList(c.Keys)...)
	add(stringList(c.Including)...)
	add(stringList(c.FkAttrs)...)
	add(stringList(c.FkDelSetCols)...)
	if c.Pktable != nil && c.Pktable.Relname == a.nt.Name && (c.Pktable.Schemaname == "" || c.Pktable.Schemaname == a.nt.Schema) {
		add(stringList(c.PkAttrs)...)
	}
	add(ddlEncryptedRefs(c, enc)...)
	for _, k := range append(stringList(c.Keys), stringList(c.Including)...) {
		if err := ddlRefusePhysical(a.nt, "ADD CONSTRAINT "+name, k); err != nil {
			return err
		}
	}
	if len(refs) == 0 {
		a.keep(n)
		return nil
	}
	if c.Contype == pg_query.ConstrType_CONSTR_FOREIGN && c.Pktable != nil && a.plainFK == nil {
		fk, pk := stringList(c.FkAttrs), stringList(c.PkAttrs)
		self := c.Pktable.Relname == a.nt.Name && (c.Pktable.Schemaname == "" || c.Pktable.Schemaname == a.nt.Schema)
		undeclared := true
		var from []string
		for _, r := range refs {
			switch {
			case slices.Contains(fk, r):
				undeclared = undeclared && !a.policy(a.nt.Schema+"."+a.nt.Name, r).Declared
				from = append(from, r)
			case self && slices.Contains(pk, r):
				// The referenced column of a key to this same table.
			default:
				undeclared = false
			}
		}
		if undeclared && len(from) > 0 {
			rel := Relation{Schema: c.Pktable.Schemaname, Name: c.Pktable.Relname}
			if rel.Schema == "" {
				rel.Schema = a.nt.Schema
			}
			a.plainFK, a.fkTable, a.fkColumns = from, &rel, pk
			return nil
		}
	}
	if c.Contype != pg_query.ConstrType_CONSTR_PRIMARY && c.Contype != pg_query.ConstrType_CONSTR_UNIQUE {
		return Refusal("%s over encrypted column %s.%s is not supported: the server cannot evaluate it over ciphertexts", name, table, refs[0])
	}
	for _, k := range stringList(c.Including) {
		if enc[k] != nil {
			return Refusal("INCLUDE of encrypted column %s.%s in a %s constraint is not supported", table, k, name)
		}
	}
	keys := stringList(c.Keys)
	for _, k := range keys {
		col := enc[k]
		if col == nil {
			continue
		}
		if col.Policy == catalog.Sensitive {
			return Refusal("%s over sensitive column %s.%s: the server could only enforce it on deterministic ciphertexts, which a sensitive column never has", name, table, k)
		}
		switch col.Onions["eq"] {
		case string(onion.LayerDET):
		case string(onion.LayerRND):
			// The server can enforce uniqueness only on deterministic
			// ciphertexts: the Eq onion is peeled to DET (the caller
			// does it, with the RND key), as CryptDB does when a query
			// needs equality. The server learns which rows are equal.
			col.Onions["eq"] = string(onion.LayerDET)
			a.changed = true
			if !slices.Contains(a.peel, k) {
				a.peel = append(a.peel, k)
			}
		default:
			return Refusal("%s over encrypted column %s.%s: its Eq onion is at %s", name, table, k, strings.ToUpper(col.Onions["eq"]))
		}
	}
	nc := proto.Clone(c).(*pg_query.Constraint)
	if nc.Conname == "" {
		nc.Conname = constraintNameFor(table, keys, c.Contype == pg_query.ConstrType_CONSTR_PRIMARY)
	}
	nc.Keys = nil
	for _, k := range keys {
		if enc[k] != nil {
			k = EqColumn(k)
		}
		nc.Keys = append(nc.Keys, pg_query.MakeStrNode(k))
	}
	cc := proto.Clone(cmd).(*pg_query.AlterTableCmd)
	cc.Def = &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: nc}}
	a.emit(cc)
	return nil
}

// ddlPlanRename plans ALTER TABLE ... RENAME.
func ddlPlanRename(st Statement, rs *pg_query.RenameStmt, t *catalog.Table) (*AlterPlan, error) {
	switch rs.RenameType {
	case pg_query.ObjectType_OBJECT_TABLE:
		// The physical table has the logical name; keys follow the
		// column ids, so nothing is re-encrypted.
		nt := ddlCopyTable(t)
		nt.Name, nt.Physical = rs.Newname, rs.Newname
		return &AlterPlan{SQL: st.SQL, Table: nt}, nil
	case pg_query.ObjectType_OBJECT_TABCONSTRAINT:
		return &AlterPlan{SQL: st.SQL}, nil
	}
	// RENAME COLUMN.
	what := "RENAME COLUMN"
	if err := ddlRefusePhysical(t, what, rs.Subname); err != nil {
		return nil, err
	}
	if rs.Newname == SaltColumn {
		return nil, Refusal("%s %s.%s TO %s: the name %s is reserved for the proxy's per-row salt", what, t.Name, rs.Subname, rs.Newname, SaltColumn)
	}
	col := t.Column(rs.Subname)
	if col == nil {
		return &AlterPlan{SQL: st.SQL}, nil // the server reports it as usual
	}
	if rs.Newname != rs.Subname && t.Column(rs.Newname) != nil {
		return nil, ddlDuplicateColumn(t.Name, rs.Newname)
	}
	nt := ddlCopyTable(t)
	nt.Column(rs.Subname).Name = rs.Newname
	// The proxy's stored expressions name the column too.
	for i, c := range nt.Checks {
		expr, err := renameColumnRefs(c.Expr, rs.Subname, rs.Newname, st.version)
		if err != nil {
			return nil, err
		}
		nt.Checks[i].Expr = expr
	}
	for i := range nt.Columns {
		if g := nt.Columns[i].Generation; g != nil {
			expr, err := renameColumnRefs(*g, rs.Subname, rs.Newname, st.version)
			if err != nil {
				return nil, err
			}
			nt.Columns[i].Generation = &expr
		}
	}
	if col.Policy == catalog.Plain {
		return &AlterPlan{SQL: st.SQL, Table: nt}, nil
	}
	_, layout, err := columnLayout(col)
	if err != nil {
		return nil, err
	}
	var stmts []string
	for _, pc := range layout {
		r := proto.Clone(rs).(*pg_query.RenameStmt)
		r.Subname = pc.Name
		r.Newname = physicalPrefix(rs.Newname) + pc.Suffix
		sql, err := ddlDeparse(st.version, &pg_query.Node{Node: &pg_query.Node_RenameStmt{RenameStmt: r}})
		if err != nil {
			return nil, fmt.Errorf("rewrite: deparsing RENAME COLUMN %s.%s: %w", t.Name, rs.Subname, err)
		}
		stmts = append(stmts, sql)
	}
	return &AlterPlan{SQL: strings.Join(stmts, "; "), Table: nt}, nil
}
