package recrypt

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Plan is what a rewrite does (or, with DryRun, would do).
type Plan struct {
	Schema, Table string
	Kind          Kind
	// Register is set when the table enters the catalog.
	Register bool
	Columns  []PlanColumn
	// Skipped names columns left as they are, and why.
	Skipped []string
	Blocks  int64 // heap blocks of the table
	Rows    int64 // rows (the planner's estimate)
	// Indexes says what happens to the indexes and constraints over
	// the columns.
	Indexes []string
}

// PlanColumn is one column of a Plan.
type PlanColumn struct {
	Name     string
	From, To string // "plain", or the policy and onions
	Resumed  bool   // a run was under way: it goes on from its checkpoint
	Done     int64  // rows already converted
}

// run is a rewrite in progress.
type run struct {
	plan    *Plan
	tableID catalog.ID
	rel     string // the quoted physical table
	jobs    []*job
	started int64 // next block to backfill
	indexes []indexRebuild
	strays  []string // indexes killed runs left (strayIndexes)
}

// othersUnderway refuses a rewrite of kind while one of another kind of
// the same table is under way.
func othersUnderway(resume map[string]recorded, kind Kind, table string) error {
	for name, rec := range resume {
		if rec.kind != kind {
			command := map[Kind]string{Encrypt: "proxy encrypt", Decrypt: "proxy decrypt", Reencrypt: "proxy keys rotate or proxy columns set"}[rec.kind]
			return fmt.Errorf("a %s of %s.%s is under way: finish it first (%s), or abort it (proxy encrypt --abort %s %s)", rec.kind, table, name, command, table, name)
		}
	}
	return nil
}

func attributesByName(attrs []attribute) map[string]attribute {
	out := make(map[string]attribute, len(attrs))
	for _, a := range attrs {
		out[a.name] = a
	}
	return out
}

// resumeFrom lowers the block the backfill starts at to rec's checkpoint
// (a column without one starts from the beginning).
func (ru *run) resumeFrom(rec recorded) {
	if len(ru.jobs) == 0 || rec.nextBlock < ru.started {
		ru.started = rec.nextBlock
	}
}

// attribute is a physical column of the table.
type attribute struct {
	num     int16
	name    string
	typ     string
	notNull bool
}

func (r *Rewriter) attributes(ctx context.Context, q pgx.Tx, rel string) ([]attribute, error) {
	var kind string
	if err := q.QueryRow(ctx, "SELECT relkind::text FROM pg_class WHERE oid = to_regclass($1)", rel).Scan(&kind); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("table %s does not exist", rel)
		}
		return nil, err
	}
	if kind != "r" {
		return nil, fmt.Errorf("%s is not an ordinary table (relkind %s): partitioned tables, views and foreign tables cannot be rewritten", rel, kind)
	}
	rows, err := q.Query(ctx, `SELECT attnum, attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute
		WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, rel)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (attribute, error) {
		var a attribute
		err := row.Scan(&a.num, &a.name, &a.typ, &a.notNull)
		return a, err
	})
}

// dependents describes the objects that depend on column num of rel
// (constraints, defaults, views, triggers), but for the rewriter's own
// triggers and the indexes and UNIQUE, PRIMARY KEY and exclusion
// constraints of the table (planIndexes rebuilds or refuses those): the
// server evaluates them over the stored form, so they cannot follow a
// column into another form.
func dependents(ctx context.Context, q pgx.Tx, rel string, num int16) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT pg_describe_object(d.classid, d.objid, d.objsubid) FROM pg_depend d
		WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = to_regclass($1) AND d.refobjsubid = $2 AND d.deptype IN ('n', 'a')
		AND NOT (d.classid = 'pg_trigger'::regclass AND EXISTS (SELECT 1 FROM pg_trigger g WHERE g.oid = d.objid AND g.tgname LIKE 'pgonion\_rewrite\_%'))
		AND NOT (d.classid = 'pg_class'::regclass AND EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = d.objid AND c.relkind IN ('i', 'I')))
		AND NOT (d.classid = 'pg_constraint'::regclass AND EXISTS (SELECT 1 FROM pg_constraint k WHERE k.oid = d.objid AND k.contype IN ('p', 'u', 'x') AND k.conrelid = d.refobjid))
		AND NOT (d.classid = 'pg_constraint'::regclass AND EXISTS (SELECT 1 FROM pg_constraint k WHERE k.oid = d.objid AND k.contype = 'c' AND k.conname LIKE 'pgonion\_not\_null\_%'))
		ORDER BY 1`, rel, num)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// recorded is a rewrite row of pgonion.rewrites.
type recorded struct {
	kind      Kind
	target    catalog.Column
	nextBlock int64
	rowsDone  int64
}

func (r *Rewriter) recordedRewrites(ctx context.Context, q pgx.Tx, id catalog.ID) (map[string]recorded, error) {
	rows, err := q.Query(ctx, "SELECT column_name, kind, target, mac, next_block, rows_done FROM pgonion.rewrites WHERE table_id = $1", id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]recorded{}
	for rows.Next() {
		var name, kind, target string
		var mac []byte
		var rec recorded
		if err := rows.Scan(&name, &kind, &target, &mac, &rec.nextBlock, &rec.rowsDone); err != nil {
			return nil, err
		}
		rec.kind = Kind(kind)
		switch rec.kind {
		case Encrypt, Decrypt, Reencrypt:
		default:
			continue // a scrub (Scrub)
		}
		if !hmac.Equal(mac, targetMAC(r.Keys.MACKey, id, rec.kind, []byte(target))) {
			return nil, fmt.Errorf("%w: the recorded rewrite of column %s does not authenticate", catalog.ErrTampered, name)
		}
		if err := json.Unmarshal([]byte(target), &rec.target); err != nil {
			return nil, err
		}
		out[name] = rec
	}
	return out, rows.Err()
}

// tableSize returns the table's heap blocks and estimated rows.
func tableSize(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, rel string) (blocks, rows int64, err error) {
	err = q.QueryRow(ctx, `SELECT pg_relation_size(to_regclass($1)) / current_setting('block_size')::bigint,
		greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = to_regclass($1)`, rel).Scan(&blocks, &rows)
	return blocks, rows, err
}

// prepareEncrypt plans the adoption of columns (all whose policy is not
// plain when none is named) and, unless DryRun, creates their shadows.
func (r *Rewriter) prepareEncrypt(ctx context.Context, tx pgx.Tx, schema, table string, columns []string, policy rewrite.PolicyFunc) (*run, error) {
	snap, err := catalog.Load(ctx, tx, r.Keys.MACKey)
	if err != nil {
		return nil, err
	}
	rel := qualified(schema, table)
	attrs, err := r.attributes(ctx, tx, rel)
	if err != nil {
		return nil, err
	}
	indexes, err := tableIndexes(ctx, tx, rel)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Schema: schema, Table: table, Kind: Encrypt}
	ru := &run{plan: plan, rel: rel}
	t := snap.Table(schema, table)
	if t == nil {
		for _, a := range attrs {
			if a.name == rewrite.SaltColumn || strings.Contains(a.name, "__") {
				return nil, fmt.Errorf("table %s has a column %s, reserved for the proxy's storage, but the catalog does not list it: it may have been tampered with", rel, a.name)
			}
		}
		plan.Register = true
		t = &catalog.Table{Schema: schema, Name: table, Physical: table}
		for i, a := range attrs {
			t.Columns = append(t.Columns, catalog.Column{ID: catalog.NewID(), Position: i + 1, Name: a.name, Type: a.typ, Policy: catalog.Plain})
		}
	} else if t.Physical != table {
		return nil, fmt.Errorf("table %s is stored as %s", rel, t.Physical)
	}
	ru.tableID = t.ID
	var resume map[string]recorded
	if !plan.Register {
		if resume, err = r.recordedRewrites(ctx, tx, t.ID); err != nil {
			return nil, err
		}
	}
	if err := othersUnderway(resume, Encrypt, table); err != nil {
		return nil, err
	}
	explicit := len(columns) > 0
	if !explicit {
		for name := range resume {
			columns = append(columns, name)
		}
		for _, c := range t.Columns {
			if c.Policy == catalog.Plain && !slices.Contains(columns, c.Name) {
				columns = append(columns, c.Name)
			}
		}
	}
	byName := attributesByName(attrs)
	for _, name := range columns {
		c := t.Column(name)
		if c == nil {
			return nil, fmt.Errorf("table %s has no column %s", rel, name)
		}
		if c.Policy != catalog.Plain {
			plan.Skipped = append(plan.Skipped, name+": already encrypted")
			continue
		}
		target, err := Target(schema, table, *c, policy)
		if err != nil {
			return nil, err
		}
		if target.Policy == catalog.Plain {
			if explicit {
				return nil, fmt.Errorf("the policy of %s.%s is plain: declare how to store it first (proxy columns set %s.%s --policy encrypted)", table, name, table, name)
			}
			plan.Skipped = append(plan.Skipped, name+": policy plain")
			continue
		}
		if err := shapeForIndexes(indexes, name, table, &target); err != nil {
			return nil, err
		}
		target.RootGeneration = r.Keys.Generation
		if g, ok := snap.Groups()[target.JoinGroup]; ok && target.JoinGroup != "" {
			target.Format, target.GroupKeyVersion, target.RootGeneration = g.Format, g.Newest.Version, g.Newest.Generation
		}
		a, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("column %s.%s is in the catalog but not on the server", table, name)
		}
		if len(name)+len(PlaintextSuffix) > 63 {
			return nil, fmt.Errorf("column %s.%s: its name is too long to set the plaintext aside as %s%s (63 bytes at most)", table, name, name, PlaintextSuffix)
		}
		deps, err := dependents(ctx, tx, rel, a.num)
		if err != nil {
			return nil, err
		}
		if len(deps) > 0 {
			return nil, fmt.Errorf("column %s.%s cannot be encrypted in place: the server evaluates %s over its plaintext\nhint: drop those (or declare the column plain), then run again", table, name, strings.Join(deps, ", "))
		}
		pc := PlanColumn{Name: name, From: "plain", To: describe(target)}
		if rec, ok := resume[name]; ok {
			if !sameForm(rec.target, target) {
				return nil, fmt.Errorf("an adoption of %s.%s as %s is under way, but its policy now says %s\nhint: restore the policy and run again, or abort it (proxy encrypt --abort %s %s)", table, name, describe(rec.target), describe(target), table, name)
			}
			target = rec.target
			pc.Resumed, pc.Done = true, rec.rowsDone
		}
		ru.resumeFrom(resume[name])
		plan.Columns = append(plan.Columns, pc)
		j, err := r.newJob(Encrypt, *c, target)
		if err != nil {
			return nil, err
		}
		j.attnum = a.num
		ru.jobs = append(ru.jobs, j)
	}
	if plan.Blocks, plan.Rows, err = tableSize(ctx, tx, rel); err != nil {
		return nil, err
	}
	if r.DryRun || len(ru.jobs) == 0 {
		// (Planned for the plan's description only: a table not
		// registered yet has no id, from which the rebuilds' names
		// derive.)
		return ru, r.planRunIndexes(ctx, tx, ru, t, indexes)
	}
	if plan.Register {
		// The twin first, from the table as the client made it.
		if err := createTwin(ctx, tx, schema, table); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s bytea", rel, rewrite.SaltColumn)); err != nil {
			return nil, err
		}
		if err := catalog.CreateTable(ctx, tx, r.Keys.MACKey, t); err != nil {
			return nil, err
		}
		ru.tableID = t.ID
	}
	// After registering: the rebuilds' names derive from the table's id,
	// the same on every run.
	if err := r.planRunIndexes(ctx, tx, ru, t, indexes); err != nil {
		return nil, err
	}
	for _, j := range ru.jobs {
		if err := r.createShadow(ctx, tx, ru, j); err != nil {
			return nil, err
		}
	}
	return ru, nil
}

// createShadow adds the job's shadow columns and trigger and records the
// rewrite (all idempotent).
func (r *Rewriter) createShadow(ctx context.Context, tx pgx.Tx, ru *run, j *job) error {
	var adds []string
	if j.new != nil {
		for _, pc := range j.new.cells {
			adds = append(adds, fmt.Sprintf("ADD COLUMN IF NOT EXISTS %s %s", quoteIdent(pc.Name), pc.SQLType))
		}
	} else {
		adds = append(adds, fmt.Sprintf("ADD COLUMN IF NOT EXISTS %s %s", quoteIdent(j.plain), j.old.col.Type))
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s %s", ru.rel, strings.Join(adds, ", "))); err != nil {
		return fmt.Errorf("adding the shadow of %s: %w", j.name, err)
	}
	var of, args []string
	for _, s := range j.sources() {
		of = append(of, quoteIdent(s))
	}
	for _, s := range j.shadows() {
		args = append(args, quoteLiteral(s))
	}
	if _, err := tx.Exec(ctx, fmt.Sprintf("CREATE OR REPLACE TRIGGER %s BEFORE UPDATE OF %s ON %s FOR EACH ROW EXECUTE FUNCTION pgonion.empty_shadow(%s)",
		quoteIdent(j.triggerName()), strings.Join(of, ", "), ru.rel, strings.Join(args, ", "))); err != nil {
		return fmt.Errorf("adding the trigger of %s: %w", j.name, err)
	}
	target, err := encodeTarget(j.to)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO pgonion.rewrites (table_id, column_name, kind, target, mac) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (table_id, column_name) DO NOTHING`, ru.tableID, j.name, string(j.kind), string(target), targetMAC(r.Keys.MACKey, ru.tableID, j.kind, target))
	return err
}

// describe names a column's stored form.
func describe(c catalog.Column) string {
	if c.Policy == catalog.Plain {
		return "plain"
	}
	s := string(c.Policy) + " (" + strings.Join(c.Capabilities, ",") + ")"
	if c.JoinGroup != "" {
		s += " in join group " + c.JoinGroup
	}
	if c.KeyVersion > 0 {
		s += fmt.Sprintf(", key version %d", c.KeyVersion)
	}
	return s
}

// quoteLiteral quotes a SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// prepareDecrypt plans turning columns (every encrypted one when none is
// named) back into plaintext and, unless DryRun, creates their shadows.
func (r *Rewriter) prepareDecrypt(ctx context.Context, tx pgx.Tx, schema, table string, columns []string) (*run, error) {
	return r.prepareEncrypted(ctx, tx, schema, table, columns, Decrypt, func(c catalog.Column) (catalog.Column, string, error) {
		return catalog.Column{ID: c.ID, Position: c.Position, Name: c.Name, Type: c.Type, Policy: catalog.Plain}, "", nil
	})
}

// prepareEncrypted plans a rewrite of encrypted columns (every one when
// none is named) into the forms target gives them (or the reason to
// leave one alone) and, unless DryRun, creates their shadows.
func (r *Rewriter) prepareEncrypted(ctx context.Context, tx pgx.Tx, schema, table string, columns []string, kind Kind,
	target func(c catalog.Column) (to catalog.Column, skip string, err error)) (*run, error) {
	snap, err := catalog.Load(ctx, tx, r.Keys.MACKey)
	if err != nil {
		return nil, err
	}
	rel := qualified(schema, table)
	t := snap.Table(schema, table)
	plan := &Plan{Schema: schema, Table: table, Kind: kind}
	if t == nil && kind == Decrypt {
		// Nothing encrypted (any more: a decryption that finished, even
		// if its process was killed before it said so).
		if _, err := r.attributes(ctx, tx, rel); err != nil {
			return nil, err
		}
		plan.Skipped = append(plan.Skipped, "*: the table has no encrypted column")
		return &run{plan: plan, rel: rel}, nil
	}
	if t == nil {
		return nil, fmt.Errorf("table %s has no encrypted column (the catalog does not list it)", rel)
	}
	if g := rewrite.Generated(t); kind == Decrypt && len(g) > 0 {
		// Plain, it would need the server to compute it again.
		return nil, fmt.Errorf("table %s has generated column %s, which the proxy computes: decrypting its columns is not supported yet", rel, g[0].Name)
	}
	attrs, err := r.attributes(ctx, tx, rel)
	if err != nil {
		return nil, err
	}
	indexes, err := tableIndexes(ctx, tx, rel)
	if err != nil {
		return nil, err
	}
	ru := &run{plan: plan, rel: rel, tableID: t.ID}
	resume, err := r.recordedRewrites(ctx, tx, t.ID)
	if err != nil {
		return nil, err
	}
	if err := othersUnderway(resume, kind, table); err != nil {
		return nil, err
	}
	if len(columns) == 0 {
		for _, c := range t.Columns {
			if c.Policy != catalog.Plain {
				columns = append(columns, c.Name)
			}
		}
	}
	byName := attributesByName(attrs)
	for _, name := range columns {
		c := t.Column(name)
		if c == nil {
			return nil, fmt.Errorf("table %s has no column %s", rel, name)
		}
		if c.Policy == catalog.Plain {
			plan.Skipped = append(plan.Skipped, name+": plain")
			continue
		}
		to, skip, err := target(*c)
		if err != nil {
			return nil, err
		}
		if kind == Reencrypt && skip == "" {
			if err := shapeForIndexes(indexes, rewrite.EqColumn(name), table, &to); err != nil {
				return nil, err
			}
		}
		rec, under := resume[name]
		if under {
			if !sameForm(rec.target, to) {
				return nil, fmt.Errorf("a %s of %s.%s to %s is under way, but now %s is asked\nhint: finish it as it was, or abort it (--abort)", kind, table, name, describe(rec.target), describe(to))
			}
			to, skip = rec.target, ""
		}
		if skip != "" {
			plan.Skipped = append(plan.Skipped, name+": "+skip)
			continue
		}
		j, err := r.newJob(kind, *c, to)
		if err != nil {
			return nil, err
		}
		eq, ok := byName[j.old.cell("_eq")]
		if !ok {
			return nil, fmt.Errorf("column %s.%s is in the catalog but its cells are not on the server", table, name)
		}
		j.attnum = eq.num
		for _, pc := range j.old.cells {
			a, ok := byName[pc.Name]
			if !ok {
				continue
			}
			deps, err := dependents(ctx, tx, rel, a.num)
			if err != nil {
				return nil, err
			}
			if len(deps) > 0 {
				return nil, fmt.Errorf("column %s.%s cannot be rewritten in place: %s use its encrypted cells\nhint: drop those, then run again", table, name, strings.Join(deps, ", "))
			}
		}
		for _, s := range j.shadows() {
			if a, ok := byName[s]; ok && !under {
				return nil, fmt.Errorf("table %s has a physical column %s beside encrypted column %s, and no rewrite of it is under way", rel, a.name, name)
			}
		}
		pc := PlanColumn{Name: name, From: describe(*c), To: describe(to)}
		if under {
			pc.Resumed, pc.Done = true, rec.rowsDone
		}
		ru.resumeFrom(rec)
		plan.Columns = append(plan.Columns, pc)
		ru.jobs = append(ru.jobs, j)
	}
	if plan.Blocks, plan.Rows, err = tableSize(ctx, tx, rel); err != nil {
		return nil, err
	}
	if err := r.planRunIndexes(ctx, tx, ru, t, indexes); err != nil {
		return nil, err
	}
	if r.DryRun {
		return ru, nil
	}
	for _, j := range ru.jobs {
		if err := r.createShadow(ctx, tx, ru, j); err != nil {
			return nil, err
		}
	}
	return ru, nil
}
