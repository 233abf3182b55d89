package recrypt

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// EncryptColumns adopts columns of schema.table (every column whose policy
// is not plain when none is named): afterwards they are encrypted as the
// policy says, as if the table had been created through the proxy, and
// their plaintext waits in c__plaintext for Scrub. A table the catalog
// does not list yet enters it. Running it again resumes an interrupted
// run, and does nothing once the columns are encrypted.
func (r *Rewriter) EncryptColumns(ctx context.Context, schema, table string, columns []string, policy rewrite.PolicyFunc) (*Plan, error) {
	return r.rewrite(ctx, schema, table, func(tx pgx.Tx) (*run, error) {
		return r.prepareEncrypt(ctx, tx, schema, table, columns, policy)
	})
}

// DecryptColumns turns encrypted columns of schema.table (every encrypted
// one when none is named) back into plaintext in place. A table left
// without encrypted columns leaves the catalog.
func (r *Rewriter) DecryptColumns(ctx context.Context, schema, table string, columns []string) (*Plan, error) {
	return r.rewrite(ctx, schema, table, func(tx pgx.Tx) (*run, error) {
		return r.prepareDecrypt(ctx, tx, schema, table, columns)
	})
}

// RotateColumns re-encrypts encrypted columns of schema.table (every one
// when none is named) under fresh keys: each gets the next key version,
// recorded in the catalog at the switch; until then the old keys read
// and write it. The new cells start at their onions' strongest layers
// (a peeled onion is peeled again when a query needs it), and a column
// an increment left in its Add onion is whole again.
//
// What it protects against: ciphertexts copied before the rotation
// (backups, replicas, a dump) together with a leaked column key cannot
// be matched with the current cells, and a key leaked later reads none of
// the old copies. A column of a join group also moves to the group's
// next key version (the keys its columns share): until every table of the
// group is rotated, the server cannot compare the rotated columns with
// the others, and the proxy refuses such comparisons (never answers them
// wrongly).
func (r *Rewriter) RotateColumns(ctx context.Context, schema, table string, columns []string) (*Plan, error) {
	groups, err := r.groups(ctx)
	if err != nil {
		return nil, err
	}
	return r.rewrite(ctx, schema, table, func(tx pgx.Tx) (*run, error) {
		return r.prepareEncrypted(ctx, tx, schema, table, columns, Reencrypt, func(c catalog.Column) (catalog.Column, string, error) {
			to := c
			to.RootGeneration = r.Keys.Generation
			if g := groups[c.JoinGroup]; c.JoinGroup != "" {
				// The group's next keys, or those some of its columns
				// have already (a rotation of the group's other tables
				// before this one).
				k := g.RotatedGroupKey(c.GroupKey(), r.Keys.Generation)
				to.RootGeneration, to.GroupKeyVersion = k.Generation, k.Version
			}
			to.KeyVersion++
			to.Incremented = false
			to.Onions = map[string]string{}
			for k := range c.Onions {
				to.Onions[k] = rewrite.StrongestLayer(onion.Kind(k))
			}
			return to, "", nil
		})
	})
}

// groups reads the join groups of the catalog.
func (r *Rewriter) groups(ctx context.Context) (map[string]catalog.Group, error) {
	snap, err := catalog.Load(ctx, r.Conn, r.Keys.MACKey)
	if err != nil {
		return nil, err
	}
	return snap.Groups(), nil
}

// ReshapeColumn re-encrypts encrypted column schema.table.column into the
// form to (other capabilities and onions, a join group): the proxy's
// columns set on an existing column. to must keep the column's id, name
// and type.
func (r *Rewriter) ReshapeColumn(ctx context.Context, schema, table, column string, to catalog.Column) (*Plan, error) {
	return r.rewrite(ctx, schema, table, func(tx pgx.Tx) (*run, error) {
		return r.prepareEncrypted(ctx, tx, schema, table, []string{column}, Reencrypt, func(c catalog.Column) (catalog.Column, string, error) {
			if to.ID != c.ID || to.Name != c.Name || to.Type != c.Type {
				return c, "", fmt.Errorf("recrypt: the new form of %s.%s must keep its id, name and type", table, column)
			}
			if sameForm(c, to) {
				return c, "already " + describe(to), nil
			}
			return to, "", nil
		})
	})
}

// BuildOnion gives encrypted column schema.table.column the onion kind
// its policy allows (its capabilities list it) but that it does not have
// yet, at its strongest layer: the proxy builds a column's search tokens
// the first time a LIKE could use them. The column's other onions keep
// their layers.
func (r *Rewriter) BuildOnion(ctx context.Context, schema, table, column string, kind onion.Kind) (*Plan, error) {
	return r.rewrite(ctx, schema, table, func(tx pgx.Tx) (*run, error) {
		return r.prepareEncrypted(ctx, tx, schema, table, []string{column}, Reencrypt, func(c catalog.Column) (catalog.Column, string, error) {
			if _, ok := c.Onions[string(kind)]; ok {
				return c, "already has its " + string(kind) + " onion", nil
			}
			if !slices.Contains(c.Capabilities, string(kind)) {
				return c, "its policy does not allow the " + string(kind) + " onion", nil
			}
			to := c
			to.Onions = maps.Clone(c.Onions)
			to.Onions[string(kind)] = rewrite.StrongestLayer(kind)
			return to, "", nil
		})
	})
}

// JoinColumn re-keys encrypted column schema.table.column into join group
// group (CryptDB's JOIN-ADJ, done by re-encryption): its Eq and Ord
// onions are encrypted again under the group's keys, at their layers, in
// the group's cell format, so that the server can compare the column with
// the group's other columns. A column already in the group is left alone;
// one in another group is refused (it would leave that group's columns
// behind).
func (r *Rewriter) JoinColumn(ctx context.Context, schema, table, column, group string) (*Plan, error) {
	groups, err := r.groups(ctx)
	if err != nil {
		return nil, err
	}
	g, exists := groups[group]
	format, key := int(onion.FormatLatest), g.Newest
	if exists {
		format = g.Format
	}
	return r.rewrite(ctx, schema, table, func(tx pgx.Tx) (*run, error) {
		return r.prepareEncrypted(ctx, tx, schema, table, []string{column}, Reencrypt, func(c catalog.Column) (catalog.Column, string, error) {
			switch c.JoinGroup {
			case group:
				return c, "already in join group " + group, nil
			case "":
			default:
				return c, "", fmt.Errorf("column %s.%s is in join group %s; moving it to %s would leave that group's other columns behind", table, column, c.JoinGroup, group)
			}
			if err := catalog.CheckJoinGroup(group, c.Policy, c.Capabilities); err != nil {
				return c, "", fmt.Errorf("column %s.%s: %w", table, column, err)
			}
			to := c
			to.JoinGroup, to.Format = group, format
			if exists {
				// The group's keys as its newest columns have them.
				to.RootGeneration, to.GroupKeyVersion = key.Generation, key.Version
			} else {
				to.GroupKeyVersion = 0
			}
			return to, "", nil
		})
	})
}

func (r *Rewriter) rewrite(ctx context.Context, schema, table string, prepare func(pgx.Tx) (*run, error)) (*Plan, error) {
	unlock, err := r.lockTable(ctx, schema, table)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := r.setSession(ctx); err != nil {
		return nil, err
	}
	defer func() {
		// The Paillier encrypter a cipher started, with its goroutines.
		for _, enc := range r.hom {
			enc.Close()
		}
		r.hom = nil
	}()
	var ru *run
	err = pgx.BeginFunc(ctx, r.Conn, func(tx pgx.Tx) error {
		var err error
		if ru, err = prepare(tx); err != nil {
			return err
		}
		if r.DryRun {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) || err == nil && len(ru.jobs) == 0 {
		return ru.plan, nil
	}
	if err != nil {
		return nil, err
	}
	began := time.Now()
	if err := r.backfill(ctx, ru, began); err != nil {
		return ru.plan, err
	}
	if len(ru.indexes) > 0 {
		r.report(Progress{Table: ru.plan.Table, Phase: "indexes", Since: time.Since(began)})
		if err := r.buildIndexes(ctx, ru); err != nil {
			return ru.plan, err
		}
	}
	if err := r.catchUp(ctx, ru, began); err != nil {
		return ru.plan, err
	}
	if err := r.cutover(ctx, ru, began); err != nil {
		return ru.plan, err
	}
	return ru.plan, nil
}

var errDryRun = errors.New("dry run")

// names are the jobs' columns.
func (ru *run) names() []string {
	out := make([]string, len(ru.jobs))
	for i, j := range ru.jobs {
		out[i] = j.name
	}
	return out
}

// backfill converts the table block range by block range, each range in
// one transaction with its checkpoint.
func (r *Rewriter) backfill(ctx context.Context, ru *run, began time.Time) error {
	total, _, err := tableSize(ctx, r.Conn, ru.rel)
	if err != nil {
		return err
	}
	var rows int64
	for _, c := range ru.plan.Columns {
		rows = max(rows, c.Done)
	}
	k := r.batchBlocks()
	for b := ru.started; b < total; b += k {
		end := min(b+k, 1<<32-1)
		var n int64
		err := pgx.BeginFunc(ctx, r.Conn, func(tx pgx.Tx) error {
			var err error
			if n, err = r.convert(ctx, tx, ru, fmt.Sprintf("ctid >= '(%d,0)'::tid AND ctid < '(%d,0)'::tid", b, end), 0, false); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `UPDATE pgonion.rewrites SET next_block = $3, rows_done = rows_done + $4, updated = now()
				WHERE table_id = $1 AND column_name = ANY($2)`, ru.tableID, ru.names(), end, n)
			return err
		})
		if err != nil {
			return err
		}
		rows += n
		r.pace(ctx, rows, began)
		p := Progress{Table: ru.plan.Table, Phase: "backfill", Blocks: end, Total: total, Rows: rows, Since: time.Since(began)}
		r.report(p)
		if r.AfterBatch != nil {
			if err := r.AfterBatch(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// catchUpSweeps bounds the catch-up's passes over the table.
const catchUpSweeps = 4

// catchUp converts, without the exclusive lock, the rows written or
// inserted during the backfill: it sweeps the table block range by block
// range (skipping rows other transactions hold) until a sweep finds few
// rows (at most one per block of the table), or no longer halves what
// the one before found (the application rewrites the columns about as
// fast as they are converted): the switch converts what is left, under
// its lock.
func (r *Rewriter) catchUp(ctx context.Context, ru *run, began time.Time) error {
	k := r.batchBlocks()
	var rows int64
	prev := int64(-1)
	paced := time.Now()
	for sweep := 1; sweep <= catchUpSweeps; sweep++ {
		total, _, err := tableSize(ctx, r.Conn, ru.rel)
		if err != nil {
			return err
		}
		var found int64
		for b := int64(0); b < total; b += k {
			end := min(b+k, 1<<32-1)
			var n int64
			err := pgx.BeginFunc(ctx, r.Conn, func(tx pgx.Tx) error {
				var err error
				n, err = r.convert(ctx, tx, ru, fmt.Sprintf("ctid >= '(%d,0)'::tid AND ctid < '(%d,0)'::tid", b, end), 0, true)
				return err
			})
			if err != nil {
				return err
			}
			found += n
			r.pace(ctx, rows+found, paced)
		}
		rows += found
		r.report(Progress{Table: ru.plan.Table, Phase: fmt.Sprintf("catch-up (sweep %d)", sweep), Rows: rows, Since: time.Since(began)})
		if found <= total || prev >= 0 && found*2 > prev {
			return nil
		}
		prev = found
	}
	return nil
}

// cutover swaps the forms under an exclusive lock: the last rows are
// converted, the old form is set aside or dropped and the catalog records
// the new one, in one transaction. The lock is waited for LockTimeout at
// a time, so that a long transaction of the application does not queue
// every other statement behind the rewriter.
func (r *Rewriter) cutover(ctx context.Context, ru *run, began time.Time) error {
	timeout, tries := r.LockTimeout, r.LockTries
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	if tries <= 0 {
		tries = 30
	}
	drop, err := r.declareSwitch(ctx, ru)
	if err != nil {
		return err
	}
	defer drop()
	for try := 1; ; try++ {
		err := pgx.BeginFunc(ctx, r.Conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", timeout.Milliseconds())); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, fmt.Sprintf("LOCK TABLE %s IN ACCESS EXCLUSIVE MODE", ru.rel)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = 0"); err != nil {
				return err
			}
			if _, err := r.convert(ctx, tx, ru, "true", 0, false); err != nil {
				return err
			}
			if err := r.swap(ctx, tx, ru); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "DELETE FROM pgonion.rewrites WHERE table_id = $1 AND column_name = ANY($2)", ru.tableID, ru.names())
			return err
		})
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "55P03" && try < tries {
			r.report(Progress{Table: ru.plan.Table, Phase: "cutover (waiting for the table lock)", Since: time.Since(began)})
			continue
		}
		if err != nil {
			return fmt.Errorf("switching %s to its new form: %w", ru.rel, err)
		}
		r.report(Progress{Table: ru.plan.Table, Phase: "cutover", Since: time.Since(began)})
		return nil
	}
}

// swap replaces the old form with the new one (under the exclusive lock)
// and records the new form in the catalog.
func (r *Rewriter) swap(ctx context.Context, tx pgx.Tx, ru *run) error {
	notNull := func(col string) (bool, error) {
		var nn bool
		err := tx.QueryRow(ctx, "SELECT attnotnull FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped", ru.rel, col).Scan(&nn)
		return nn, err
	}
	// encryptedNotNull reports whether encrypted column name is NOT NULL:
	// its Eq cell, or (a column with an Add onion) rewrite.NotNullCheck.
	encryptedNotNull := func(name, eq string) (bool, error) {
		nn, err := notNull(eq)
		if err != nil || nn {
			return nn, err
		}
		err = tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = to_regclass($1) AND conname = $2)", ru.rel, rewrite.NotNullCheckName(name)).Scan(&nn)
		return nn, err
	}
	// setNotNull makes the new form std of column name NOT NULL.
	setNotNull := func(name string, std *form) string {
		if std.cell("_add") != "" {
			return fmt.Sprintf("ALTER TABLE %s ADD %s", ru.rel, rewrite.NotNullCheckSQL(name))
		}
		return fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET NOT NULL", ru.rel, quoteIdent(std.cell("_eq")))
	}
	dropIndexes, addIndexes := ru.indexSwap()
	ddl := dropIndexes
	for _, j := range ru.jobs {
		if _, err := tx.Exec(ctx, fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", quoteIdent(j.triggerName()), ru.rel)); err != nil {
			return err
		}
		alter := func(cmds []string) {
			if len(cmds) > 0 {
				ddl = append(ddl, fmt.Sprintf("ALTER TABLE %s %s", ru.rel, strings.Join(cmds, ", ")))
			}
		}
		if j.old == nil {
			// Encrypt: the plaintext is set aside for the final step.
			nn, err := notNull(j.plain)
			if err != nil {
				return err
			}
			aside := j.plain + PlaintextSuffix
			ddl = append(ddl, fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", ru.rel, quoteIdent(j.plain), quoteIdent(aside)))
			if nn {
				alter([]string{"ALTER COLUMN " + quoteIdent(aside) + " DROP NOT NULL"})
				ddl = append(ddl, setNotNull(j.name, j.new))
			}
			continue
		}
		nn, err := encryptedNotNull(j.name, j.old.cell("_eq"))
		if err != nil {
			return err
		}
		var cmds []string
		for _, c := range j.old.names() {
			cmds = append(cmds, "DROP COLUMN "+quoteIdent(c))
		}
		alter(cmds)
		if j.new == nil {
			// Decrypt: the plaintext column takes over.
			if nn {
				alter([]string{"ALTER COLUMN " + quoteIdent(j.plain) + " SET NOT NULL"})
			}
			continue
		}
		// Reencrypt: the new cells take the standard names.
		std, err := r.form(j.to, j.to.Name, false)
		if err != nil {
			return err
		}
		for _, pc := range j.new.cells {
			ddl = append(ddl, fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", ru.rel, quoteIdent(pc.Name), quoteIdent(std.cell(pc.Suffix))))
		}
		if nn {
			ddl = append(ddl, setNotNull(j.name, std))
		}
	}
	for _, s := range append(ddl, addIndexes...) {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	snap, err := catalog.Load(ctx, tx, r.Keys.MACKey)
	if err != nil {
		return err
	}
	cur := snap.TableByID(ru.tableID)
	if cur == nil {
		return fmt.Errorf("table %s left the catalog during the rewrite", ru.rel)
	}
	next := cur.Clone()
	for _, j := range ru.jobs {
		i := slices.IndexFunc(next.Columns, func(c catalog.Column) bool { return c.ID == j.to.ID })
		if i < 0 {
			return fmt.Errorf("column %s of %s left the catalog during the rewrite", j.name, ru.rel)
		}
		to := j.to
		to.Position = next.Columns[i].Position
		next.Columns[i] = to
	}
	if slices.ContainsFunc(next.Columns, func(c catalog.Column) bool { return c.Policy != catalog.Plain }) {
		return catalog.UpdateTable(ctx, tx, r.Keys.MACKey, next)
	}
	// Nothing encrypted is left: the table is plain again.
	if _, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", ru.rel, quoteIdent(rewrite.SaltColumn))); err != nil {
		return err
	}
	if err := dropTwin(ctx, tx, ru.plan.Schema, ru.plan.Table); err != nil {
		return err
	}
	return catalog.DropTable(ctx, tx, r.Keys.MACKey, ru.tableID)
}
