package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// planCreate turns CREATE TABLE into one DO block that creates the
// physical table and records it in the catalog, so both commit or fail
// together, in either protocol and inside or outside a transaction block.
// A table without encrypted columns (by policy) is created as written and
// not recorded.
func (s *session) planCreate(st rewrite.Statement, ext *extended) (*stmtPlan, error) {
	orig := st.Clone() // for the twin: planning rewrites st
	cs := st.Tree.Stmt.GetCreateStmt()
	rel := rewrite.Relation{Schema: cs.Relation.Schemaname, Name: cs.Relation.Relname}
	if rel.Schema == "" {
		rel.Schema = rewrite.DefaultSchema
	}
	if t, err := s.lookup(rel); err != nil || t != nil {
		return nil, err // the server reports that it exists (or skips)
	}
	policy, err := s.e.policyFor(rel)
	if err != nil {
		return nil, err
	}
	p, err := rewrite.PlanCreateWith(st, rewrite.DefaultSchema, s.withGroupFormats(policy), s.refPlain, s.userType)
	if err != nil {
		return nil, err
	}
	if _, err := s.e.planChecks(p.Table); err != nil {
		return nil, err // a CHECK the proxy could not evaluate
	}
	if err := s.e.checkCollations(p.Table); err != nil {
		return nil, err
	}
	env, err := s.params.get()
	if err != nil {
		return nil, err
	}
	if _, err := s.e.planGenerations(p.Table, env); err != nil {
		return nil, err // a generated column the proxy could not compute
	}
	if err := planDefaults(p.Table, env); err != nil {
		return nil, err // a DEFAULT the proxy could not compute
	}
	encrypted := false
	for _, c := range p.Table.Columns {
		encrypted = encrypted || c.Policy != catalog.Plain
	}
	var notices string
	for _, n := range p.Notices {
		notices += "\nRAISE NOTICE USING MESSAGE = " + quoteLiteral(n) + ";"
	}
	if !encrypted {
		if notices == "" {
			return nil, nil
		}
		return &stmtPlan{sql: doBlock(st.SQL + ";" + notices), results: &ddlResult{tag: "CREATE TABLE", e: s.e}}, nil
	}
	base, err := s.ddlBase()
	if err != nil {
		return nil, err
	}
	if err := s.intend(rel.Schema, rel.Name, nil); err != nil {
		return nil, err
	}
	body := p.SQL + ";\n" + catalog.CreateTableSQL(s.e.macKey(), p.Table) + notices + s.twinFragment(orig, rel.Schema, rel.Name, true)
	next := base.WithTable(p.Table)
	body += catalog.SealSQL(s.e.macKey(), next, base.Version)
	if cs.IfNotExists {
		qualified := quoteIdent(rel.Schema) + "." + quoteIdent(rel.Name)
		body = fmt.Sprintf("IF to_regclass(%s) IS NULL THEN\n%s\nELSE\nRAISE NOTICE 'relation %% already exists, skipping', %s USING ERRCODE = '42P07';\nEND IF;",
			quoteLiteral(qualified), body, quoteLiteral(`"`+rel.Name+`"`))
	}
	s.planned(next)
	cp := &stmtPlan{sql: doBlock(body), results: &ddlResult{tag: "CREATE TABLE", e: s.e}}
	if len(p.ForeignKeys) == 0 {
		return cp, nil
	}
	// Foreign keys from encrypted columns: planned as the ALTER TABLE
	// that adds them, sent after the CREATE in one query string, whose
	// answers but the CREATE TABLE the client does not see.
	if ext != nil || cs.IfNotExists {
		return nil, rewrite.Refusal("CREATE TABLE %s with a foreign key from an encrypted column is supported in the simple protocol, without IF NOT EXISTS: create the table, then add the key with ALTER TABLE ... ADD FOREIGN KEY", rel.Name)
	}
	for _, fk := range p.ForeignKeys {
		// The twin got these keys with its CREATE TABLE.
		s.twinOff = true
		fp, err := s.plan(fk, nil)
		s.twinOff = false
		if err != nil {
			return nil, err
		}
		if fp == nil {
			cp.before = append(cp.before, silentResult{cp.results})
			cp.sql += ";\n" + fk.SQL
			cp.results = nil
			continue
		}
		cp.before = append(cp.before, silentResult{cp.results})
		cp.sql += ";\n" + fp.sql
		cp.results = fp.results
	}
	cp.results = taggedAs{inner: cp.results, tag: "CREATE TABLE"}
	return cp, nil
}

// refPlain is the rewrite.RefLookup of CREATE TABLE: whether a column a
// foreign key references is stored plain (every column of a table the
// catalog does not list is).
func (s *session) refPlain(schema, table, column string) (plain, known bool) {
	t, err := s.lookup(rewrite.Relation{Schema: schema, Name: table})
	switch {
	case err != nil:
		return false, false
	case t == nil:
		return true, true
	case column != "":
		c := t.Column(column)
		return c != nil && c.Policy == catalog.Plain, c != nil
	}
	// The primary key, as the server has it: an encrypted column's is
	// on its Eq cell, which the catalog does not list by that name.
	var keys []string
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	err = s.e.cat.withConn(ctx, func(conn *pgx.Conn) error {
		return conn.QueryRow(ctx, `SELECT coalesce(array_agg(a.attname::text), '{}') FROM pg_constraint c
			JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY(c.conkey)
			WHERE c.contype = 'p' AND c.conrelid = to_regclass($1)`, quoteIdent(schema)+"."+quoteIdent(t.Physical)).Scan(&keys)
	})
	if err != nil || len(keys) == 0 {
		return false, false
	}
	for _, k := range keys {
		if c := t.Column(k); c == nil || c.Policy != catalog.Plain {
			return false, true
		}
	}
	return true, true
}

// withGroupFormats returns policy with the cell format (and key version)
// of each join group that already has columns (in the catalog or in tables this session
// created) given to new columns of the group: the columns of a group
// compare their ciphertexts, so they must share a format, and a group
// created before FormatCompact keeps FormatSIV. The format decides the
// physical types of the new columns' cells.
func (s *session) withGroupFormats(policy rewrite.PolicyFunc) rewrite.PolicyFunc {
	snap := s.e.cat.snapshot()
	s.mu.Lock()
	if s.txCat != nil {
		snap = s.txCat
	}
	s.mu.Unlock()
	groups, gen := snap.Groups(), s.e.generation()
	return func(table, column string) rewrite.ColumnPolicy {
		p := policy(table, column)
		p.RootGeneration = gen
		if g, ok := groups[p.JoinGroup]; ok && p.JoinGroup != "" {
			p.Format, p.GroupKeyVersion, p.RootGeneration = g.Format, g.Newest.Version, g.Newest.Generation
		}
		return p
	}
}

// doBlock wraps statements in an anonymous PL/pgSQL block, with a dollar
// quote that the body cannot close.
func doBlock(body string) string {
	tag := "$pgonion$"
	for strings.Contains(body, tag) {
		b := make([]byte, 6)
		rand.Read(b)
		tag = "$pgonion_" + hex.EncodeToString(b) + "$"
	}
	return "DO " + tag + " BEGIN\n" + body + "\nEND " + tag
}

func quoteIdent(s string) string   { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ddlResult reports a DO block under the client's command tag and, once it
// succeeded, makes the catalog cache current before the client can send
// its next statement.
type ddlResult struct {
	tag string
	e   *Engine
}

func (*ddlResult) RowDescription(*pgproto3.RowDescription) error { return nil }
func (*ddlResult) DataRow(*pgproto3.DataRow) error               { return nil }

// CommandTag implements wire.TagRewriter.
func (r *ddlResult) CommandTag([]byte) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	r.e.cat.reload(ctx)
	return []byte(r.tag)
}

// policyFor returns the policy of the columns of a new table: those
// declared with `proxy columns set`, else the deployment's.
func (e *Engine) policyFor(rel rewrite.Relation) (rewrite.PolicyFunc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	var declared []catalog.ColumnPolicy
	err := e.cat.withConn(ctx, func(conn *pgx.Conn) error {
		key, err := e.catalogKeyOf(ctx, conn)
		if err != nil {
			return err
		}
		declared, err = catalog.Policies(ctx, conn, key, rel.Schema, rel.Name)
		return err
	})
	if err != nil {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "58000", Message: "pgonion cannot read the declared column policies: " + err.Error()}
	}
	if len(declared) == 0 {
		return e.policy, nil
	}
	byColumn := map[string]rewrite.ColumnPolicy{}
	for _, d := range declared {
		byColumn[d.Column] = rewrite.ColumnPolicy{Policy: d.Policy, Capabilities: d.Capabilities, JoinGroup: d.JoinGroup, Declared: true}
	}
	return func(table, column string) rewrite.ColumnPolicy {
		if p, ok := byColumn[column]; ok {
			return p
		}
		return e.policy(table, column)
	}, nil
}

// planDrop drops tables and their catalog entries in one DO block. DROP
// SCHEMA ... CASCADE and DROP OWNED, which could drop tables with
// encrypted columns without naming them, are refused while such tables
// exist in their reach.
func (s *session) planDrop(st rewrite.Statement) (*stmtPlan, error) {
	ds := st.Tree.Stmt.GetDropStmt()
	if ds != nil && ds.RemoveType == pg_query.ObjectType_OBJECT_SCHEMA && ds.Behavior == pg_query.DropBehavior_DROP_CASCADE {
		for _, n := range ds.Objects {
			schema := n.GetString_().GetSval()
			for _, t := range s.e.cat.snapshot().Tables() {
				if t.Schema == schema {
					return nil, rewrite.Refusal("DROP SCHEMA %s CASCADE would drop table %s with encrypted columns without the proxy; drop that table first", schema, t.Name)
				}
			}
		}
	}
	var lookupErr error
	p, err := rewrite.PlanDrop(st, func(schema, name string) *catalog.Table {
		t, err := s.lookup(rewrite.Relation{Schema: schema, Name: name})
		if err != nil && lookupErr == nil {
			lookupErr = err
		}
		return t
	}, rewrite.DefaultSchema)
	if lookupErr != nil {
		return nil, lookupErr
	}
	if err != nil || p == nil || len(p.Tables) == 0 {
		return nil, err
	}
	base, err := s.ddlBase()
	if err != nil {
		return nil, err
	}
	body := p.SQL + ";\n"
	next := base
	for _, t := range p.Tables {
		body += catalog.DropTableSQL(t.ID) + twinDrop(t.Schema, t.Name)
		next = next.WithoutTable(t.ID)
	}
	body += catalog.SealSQL(s.e.macKey(), next, base.Version)
	s.planned(next)
	return &stmtPlan{sql: doBlock(body), results: &ddlResult{tag: "DROP TABLE", e: s.e}}, nil
}

// planAlter runs ALTER TABLE on the physical table and records the new
// catalog entry in one DO block.
func (s *session) planAlter(st rewrite.Statement, t *catalog.Table) (*stmtPlan, error) {
	s.twin = s.twinFragment(st, t.Schema, t.Name, false) // before planning rewrites st
	defer func() { s.twin = "" }()
	policy, err := s.e.policyFor(rewrite.Relation{Schema: t.Schema, Name: t.Name})
	if err != nil {
		return nil, err
	}
	p, err := rewrite.PlanAlterWith(st, t, s.withGroupFormats(policy), s.userType)
	if err != nil {
		if pe := (*pgconn.PgError)(nil); !errors.As(err, &pe) {
			err = rewrite.Refusal("%s on table %s with encrypted columns is not supported: %v", statementName(st), t.Name, err)
		}
		return nil, err
	}
	if len(p.PeelEq) > 0 {
		// ADD PRIMARY KEY / UNIQUE needs DET ciphertexts. The onion is
		// peeled as a query needing it would be (its key goes to the
		// server as a parameter, never in SQL text), then the statement
		// is planned again on the new catalog.
		if pt, _ := s.pendingTable(rewrite.Relation{Schema: t.Schema, Name: t.Name}); pt != nil {
			return s.planKeyOnNewTable(st, pt, p.PeelEq, s.withGroupFormats(policy))
		}
		var needs []rewrite.Need
		for _, name := range p.PeelEq {
			c := t.Column(name)
			if c == nil {
				return nil, fmt.Errorf("engine: no column %s.%s to peel", t.Name, name)
			}
			needs = append(needs, rewrite.Need{Table: t, Column: c, Kind: onion.KindEq, Layer: onion.LayerDET})
		}
		if err := s.ensureLayers(needs); err != nil {
			return nil, err
		}
		nt := s.e.cat.snapshot().Table(t.Schema, t.Name)
		if nt == nil {
			return nil, fmt.Errorf("engine: table %s.%s left the catalog while its onions were peeled", t.Schema, t.Name)
		}
		if p, err = rewrite.PlanAlterWith(st, nt, s.withGroupFormats(policy), s.userType); err != nil {
			return nil, err
		}
		if len(p.PeelEq) > 0 {
			return nil, fmt.Errorf("engine: the Eq onion of %s.%s is still not at DET after peeling it", t.Name, p.PeelEq[0])
		}
	}
	if len(p.PlainForKeys) > 0 {
		return s.planPlainForKeys(st, t, p, s.withGroupFormats(policy))
	}
	if p.Table != nil {
		env, err := s.params.get()
		if err != nil {
			return nil, err
		}
		if err := planDefaults(p.Table, env); err != nil {
			return nil, err // a DEFAULT the proxy could not compute
		}
	}
	if p.Table != nil && (p.Table.Schema != t.Schema || p.Table.Name != t.Name) {
		// Renamed or moved: a new name with encrypted columns.
		if err := s.intend(p.Table.Schema, p.Table.Name, nil); err != nil {
			return nil, err
		}
	}
	body := ""
	if p.SQL != "" { // empty when only the catalog changes (a DEFAULT the proxy applies)
		body = p.SQL + ";\n"
	}
	return s.alterBlock(body, p.Table)
}

// planAlterForeignKeys plans an ALTER TABLE that adds foreign keys to
// other tables, of which some have encrypted columns: every column they
// reference must be stored plain (the server compares the values); the
// altered table t (nil: not in the catalog, all plain) is then altered as
// any ALTER TABLE of it.
func (s *session) planAlterForeignKeys(st rewrite.Statement, t *catalog.Table, refs []rewrite.ForeignRef) (*stmtPlan, error) {
	for _, r := range refs {
		cols := r.Columns
		if len(cols) == 0 {
			cols = []string{""}
		}
		// From encrypted columns (stored under the default policy) to
		// encrypted ones, planAlter enforces it on the Eq cells.
		fromEncrypted := t != nil && len(r.From) == 1 && t.Column(r.From[0]) != nil && t.Column(r.From[0]).Policy != catalog.Plain
		for _, c := range cols {
			if plain, known := s.refPlain(r.Table.Schema, r.Table.Name, c); (!plain || !known) && !(fromEncrypted && (known || c == "")) {
				what := r.Table.Name + "." + c
				if c == "" {
					what = "the primary key of " + r.Table.Name
				}
				return nil, rewrite.Refusal("%s with a FOREIGN KEY to %s is not supported: it is not stored plain (or not known), and the server compares the values of a foreign key", statementName(st), what)
			}
		}
	}
	if t == nil {
		return nil, nil
	}
	return s.planAlter(st, t)
}

// alterBlock is the DO block of an ALTER TABLE: body, then, when nt is
// not nil, the catalog recording nt, sealed; the session's catalog moves
// on to it.
func (s *session) alterBlock(body string, nt *catalog.Table) (*stmtPlan, error) {
	body += s.twin // the ALTER's twin form (planAlter)
	if nt != nil {
		base, err := s.ddlBase()
		if err != nil {
			return nil, err
		}
		body += catalog.UpdateTableSQL(s.e.macKey(), nt)
		next := base.WithTable(nt)
		body += catalog.SealSQL(s.e.macKey(), next, base.Version)
		s.planned(next)
	}
	// PostgreSQL reports renames of tables and columns as ALTER TABLE too.
	return &stmtPlan{sql: doBlock(body), results: &ddlResult{tag: "ALTER TABLE", e: s.e}}, nil
}

// emptyTableGuard starts a DO block that locks table rel (quoted) and
// refuses with message and hint when it has rows.
func emptyTableGuard(rel, message, hint string) string {
	return fmt.Sprintf("LOCK TABLE %s IN ACCESS EXCLUSIVE MODE;\nIF EXISTS (SELECT 1 FROM %s) THEN RAISE EXCEPTION USING ERRCODE = '0A000', MESSAGE = %s, HINT = %s; END IF;\n",
		rel, rel, quoteLiteral(message), quoteLiteral(hint))
}

// planKeyOnNewTable runs ADD PRIMARY KEY / UNIQUE over encrypted columns
// whose Eq onion is at RND, of a table created in this session's open
// transaction (ORMs add keys in the migration that creates the table).
// Another connection cannot peel such a table, but an empty one needs no
// peel: its columns are recorded at DET and the statement runs, in one DO
// block that refuses if the table has rows (their cells are at RND).
func (s *session) planKeyOnNewTable(st rewrite.Statement, t *catalog.Table, columns []string, policy rewrite.PolicyFunc) (*stmtPlan, error) {
	nt := t.Clone()
	for _, name := range columns {
		c := nt.Column(name)
		if c == nil {
			return nil, fmt.Errorf("engine: no column %s.%s to key", t.Name, name)
		}
		c.Onions[string(onion.KindEq)] = string(onion.LayerDET)
	}
	p, err := rewrite.PlanAlter(st, nt, policy)
	if err != nil {
		return nil, err
	}
	if len(p.PeelEq) > 0 || len(p.PlainForKeys) > 0 {
		return nil, fmt.Errorf("engine: %s still needs columns changed after recording %s at DET", statementName(st), strings.Join(columns, ", "))
	}
	rel := quoteIdent(t.Schema) + "." + quoteIdent(t.Physical)
	body := emptyTableGuard(rel,
		fmt.Sprintf("%s on encrypted column %s.%s of a table created in this open transaction, which has rows, is not supported: its Eq onion would have to be peeled first", statementName(st), t.Name, columns[0]),
		"Declare the key in CREATE TABLE, or commit the CREATE TABLE first.")
	if p.Table != nil {
		nt = p.Table
	}
	return s.alterBlock(body+p.SQL+";\n", nt)
}

// planPlainForKeys runs ALTER TABLE ... ADD CONSTRAINT ... FOREIGN KEY
// whose referencing columns are encrypted under the default policy
// (rewrite.AlterPlan.PlainForKeys): when they reference plain columns,
// they are stored plain first, as CREATE TABLE would have stored them,
// in the same DO block, which refuses if the table has rows (their
// ciphertexts would have to be decrypted: proxy decrypt does that).
func (s *session) planPlainForKeys(st rewrite.Statement, t *catalog.Table, p *rewrite.AlterPlan, policy rewrite.PolicyFunc) (*stmtPlan, error) {
	if pt, err := s.lookup(*p.References); err != nil {
		return nil, err
	} else if pt != nil {
		pk := p.Referenced
		if len(pk) == 0 {
			if pk, err = s.primaryKey(pt); err != nil {
				return nil, err
			}
		}
		if slices.ContainsFunc(pk, func(name string) bool { c := pt.Column(name); return c != nil && c.Policy != catalog.Plain }) {
			// To encrypted columns: enforced on the Eq cells.
			return s.planEncryptedForeignKey(st, t, pt, p.PlainForKeys, pk)
		}
	}
	for _, c := range append([]string{}, p.Referenced...) {
		if plain, known := s.refPlain(p.References.Schema, p.References.Name, c); !plain || !known {
			return nil, rewrite.Refusal("FOREIGN KEY over encrypted column %s.%s is not supported: it references %s.%s, which is not stored plain", t.Name, p.PlainForKeys[0], p.References.Name, c)
		}
	}
	if len(p.Referenced) == 0 {
		if plain, _ := s.refPlain(p.References.Schema, p.References.Name, ""); !plain {
			return nil, rewrite.Refusal("FOREIGN KEY over encrypted column %s.%s is not supported: it references the primary key of %s, which is not stored plain (or not known)", t.Name, p.PlainForKeys[0], p.References.Name)
		}
	}
	rel := quoteIdent(t.Schema) + "." + quoteIdent(t.Physical)
	nt := t.Clone()
	var b strings.Builder
	b.WriteString(emptyTableGuard(rel,
		fmt.Sprintf("%s needs %s.%s stored plain (the server enforces a foreign key on equal values), but %s has rows, encrypted", statementName(st), t.Name, p.PlainForKeys[0], t.Name),
		fmt.Sprintf("Decrypt the column first (proxy decrypt %s %s), then run the statement again.", t.Name, strings.Join(p.PlainForKeys, " "))))
	for _, name := range p.PlainForKeys {
		i := slices.IndexFunc(nt.Columns, func(c catalog.Column) bool { return c.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("engine: no column %s.%s to store plain", t.Name, name)
		}
		old := nt.Columns[i]
		cells, err := rewrite.PhysicalColumns(&old)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(cells))
		for j, pc := range cells {
			names[j] = quoteLiteral(pc.Name)
		}
		// The keys and indexes over the cells are dropped and made again
		// over the plain column (the table is empty: that is cheap); an
		// index over the Ord cell only served the encrypted form.
		cellsArr := "ARRAY[" + strings.Join(names, ", ") + "]::name[]"
		attnums := fmt.Sprintf("(SELECT array_agg(attnum) FROM pg_attribute WHERE attrelid = %s::regclass AND attname = ANY(%s))", quoteLiteral(rel), cellsArr)
		word := func(cell string) string { return quoteLiteral(`\m` + cell + `\M`) }
		fmt.Fprintf(&b, `DECLARE r record; defs text[] := '{}'; keys text[] := '{}'; kinds text[] := '{}'; BEGIN
FOR r IN SELECT c.conname::text AS name, pg_get_constraintdef(c.oid) AS def, 'c' AS kind FROM pg_constraint c
		WHERE c.conrelid = %[1]s::regclass AND c.contype IN ('p', 'u') AND c.conkey && %[2]s
	UNION ALL SELECT x.relname::text, pg_get_indexdef(i.indexrelid), 'i' FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid
		WHERE i.indrelid = %[1]s::regclass AND i.indkey::int2[] && %[2]s AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
LOOP
	IF r.kind = 'c' THEN EXECUTE format('ALTER TABLE %%s DROP CONSTRAINT %%I', %[1]s, r.name);
	ELSE EXECUTE format('DROP INDEX %%I.%%I', %[3]s, r.name); END IF;
	CONTINUE WHEN r.def ~ %[4]s;
	keys := keys || r.name; kinds := kinds || r.kind; defs := defs || regexp_replace(r.def, %[5]s, %[6]s, 'g');
END LOOP;
ALTER TABLE %[7]s ADD COLUMN %[8]s %[9]s;
IF (SELECT attnotnull FROM pg_attribute WHERE attrelid = %[1]s::regclass AND attname = %[10]s)
	OR EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = %[1]s::regclass AND conname = %[11]s) THEN
	ALTER TABLE %[7]s ALTER COLUMN %[8]s SET NOT NULL;
END IF;
`, quoteLiteral(rel), attnums, quoteLiteral(t.Schema), word(rewrite.OrdColumn(name)), word(rewrite.EqColumn(name)), quoteLiteral(quoteIdent(name)),
			rel, quoteIdent(name), old.Type, quoteLiteral(rewrite.EqColumn(name)), quoteLiteral(rewrite.NotNullCheckName(name)))
		for _, pc := range cells {
			fmt.Fprintf(&b, "ALTER TABLE %s DROP COLUMN %s;\n", rel, quoteIdent(pc.Name))
		}
		fmt.Fprintf(&b, `FOR i IN 1 .. coalesce(array_length(defs, 1), 0) LOOP
	IF kinds[i] = 'c' THEN EXECUTE format('ALTER TABLE %%s ADD CONSTRAINT %%I %%s', %s, keys[i], defs[i]);
	ELSE EXECUTE defs[i]; END IF;
END LOOP;
END;
`, quoteLiteral(rel))
		nt.Columns[i] = catalog.Column{ID: old.ID, Position: old.Position, Name: old.Name, Type: old.Type, Policy: catalog.Plain}
		fmt.Fprintf(&b, "RAISE NOTICE USING MESSAGE = %s;\n", quoteLiteral(fmt.Sprintf("column %s.%s is now stored plain: it references %s, which is stored plain, and the server enforces the foreign key on equal values", t.Name, name, p.References.Name)))
	}
	p2, err := rewrite.PlanAlter(st, nt, policy)
	if err != nil {
		return nil, err
	}
	if len(p2.PlainForKeys) > 0 || len(p2.PeelEq) > 0 {
		return nil, fmt.Errorf("engine: %s still needs columns changed after storing %s plain", statementName(st), strings.Join(p.PlainForKeys, ", "))
	}
	b.WriteString(p2.SQL + ";\n")
	if p2.Table != nil {
		nt = p2.Table
	}
	return s.alterBlock(b.String(), nt)
}

// planIndex creates the indexes of the onions an index on encrypted
// columns needs, as one statement.
func (s *session) planIndex(st rewrite.Statement, t *catalog.Table) (*stmtPlan, error) {
	orig := st.Clone()
	if needs := rewrite.UniqueIndexNeeds(st, t); len(needs) > 0 {
		if err := s.ensureLayers(needs); err != nil {
			return nil, err
		}
		rels := rewrite.Relations(st)
		var err error
		if t, err = s.lookup(rels[0]); err != nil {
			return nil, err
		}
	}
	sql, err := rewrite.PlanIndex(st, t)
	if err != nil {
		return nil, err
	}
	stmts, err := rewrite.Parse(sql)
	if err != nil {
		return nil, err
	}
	is := st.Tree.Stmt.GetIndexStmt()
	twin := ""
	switch {
	case t == nil:
	case is.GetConcurrent():
		if len(stmts) == 1 {
			// Not in a DO block: the twin would miss the index, so it
			// goes (the client then sees the physical table).
			s.e.dropTwin(t.Schema, t.Name)
		}
	default:
		twin = s.twinFragment(orig, t.Schema, t.Name, false)
	}
	if len(stmts) == 1 && twin == "" {
		return &stmtPlan{sql: sql}, nil
	}
	if len(stmts) == 1 {
		return &stmtPlan{sql: doBlock(sql + ";" + twin), results: &ddlResult{tag: "CREATE INDEX", e: s.e}}, nil
	}
	if is != nil && is.Concurrent {
		return nil, rewrite.Refusal("CREATE INDEX CONCURRENTLY on encrypted column(s) of table %s needs %d indexes, which cannot be built concurrently in one statement; create it without CONCURRENTLY", t.Name, len(stmts))
	}
	return &stmtPlan{sql: doBlock(sql + ";" + twin), results: &ddlResult{tag: "CREATE INDEX", e: s.e}}, nil
}
