package recrypt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Indexes over the columns a rewrite converts (and the UNIQUE and PRIMARY
// KEY constraints they back) follow the columns into their new form: each
// is planned again over the new form, as CREATE INDEX through the proxy
// plans it (rewrite.PlanIndex: an encrypted column is indexed by its Eq
// onion, with a companion over its Ord onion), built CONCURRENTLY over
// the shadow columns once the backfill is done (the application keeps
// writing), and put in the old one's place at the switch (a constraint
// is added again USING the new index). A column in a unique index is
// encrypted with its Eq onion at DET, the only layer at which the server
// can enforce uniqueness; one in a gin index (the way one indexes a text
// column for LIKE) gets its search onion from the start, if its policy
// allows search.
//
// Refused, because the server evaluates them over the stored form and
// the rewrite cannot rebuild them: expression and partial indexes over
// the columns, exclusion constraints, and (dependents) foreign keys,
// CHECK constraints, defaults, views and triggers.

// serverIndex is an index of the table as the server has it.
type serverIndex struct {
	name       string
	def        string // pg_get_indexdef
	constraint string // the constraint it backs ("" for none)
	contype    string // "p", "u", "x" or ""
	unique     bool
	method     string
	exprs      bool     // expressions or a predicate
	cols       []string // the physical columns it depends on
	keys       []string // its key columns (not INCLUDEd ones)
}

// tableIndexes reads the indexes of rel.
func tableIndexes(ctx context.Context, q pgx.Tx, rel string) ([]serverIndex, error) {
	rows, err := q.Query(ctx, `SELECT c.relname, pg_get_indexdef(i.indexrelid), coalesce(k.conname, ''), coalesce(k.contype::text, ''),
		i.indisunique, am.amname, i.indexprs IS NOT NULL OR i.indpred IS NOT NULL,
		ARRAY(SELECT a.attname FROM pg_attribute a WHERE a.attrelid = i.indrelid AND (a.attnum = ANY(i.indkey::int2[])
			OR EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = i.indexrelid
				AND d.refclassid = 'pg_class'::regclass AND d.refobjid = i.indrelid AND d.refobjsubid = a.attnum)) ORDER BY a.attnum),
		ARRAY(SELECT a.attname FROM unnest((i.indkey::int2[])[0:i.indnkeyatts - 1]) k(n) JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.n)
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am am ON am.oid = c.relam
		LEFT JOIN pg_constraint k ON k.conindid = i.indexrelid AND k.conrelid = i.indrelid AND k.contype IN ('p', 'u', 'x')
		WHERE i.indrelid = to_regclass($1) ORDER BY c.relname`, rel)
	if err != nil {
		return nil, fmt.Errorf("reading the indexes of %s: %w", rel, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (serverIndex, error) {
		var x serverIndex
		err := row.Scan(&x.name, &x.def, &x.constraint, &x.contype, &x.unique, &x.method, &x.exprs, &x.cols, &x.keys)
		return x, err
	})
}

// uniqueOn reports whether physical column col is a key of a unique index.
func uniqueOn(indexes []serverIndex, col string) bool {
	return slices.ContainsFunc(indexes, func(x serverIndex) bool { return x.unique && slices.Contains(x.keys, col) })
}

// ginOn reports whether physical column col is in a gin index.
func ginOn(indexes []serverIndex, col string) bool {
	return slices.ContainsFunc(indexes, func(x serverIndex) bool { return x.method == "gin" && slices.Contains(x.keys, col) })
}

// shapeForIndexes adjusts target form to of a column whose current
// physical column (plaintext, or Eq cell) is col: DET for a unique index,
// the search onion for a gin index (when the policy allows it).
func shapeForIndexes(indexes []serverIndex, col, table string, to *catalog.Column) error {
	if to.Policy == catalog.Plain {
		return nil
	}
	if uniqueOn(indexes, col) {
		if to.Policy == catalog.Sensitive {
			return fmt.Errorf("column %s.%s is in a unique index or constraint, which the server could enforce only on deterministic ciphertexts, and its policy is sensitive\nhint: drop the constraint, or declare the column encrypted", table, to.Name)
		}
		to.Onions = cloneOnions(to.Onions)
		to.Onions[string(onion.KindEq)] = string(onion.LayerDET)
	}
	if ginOn(indexes, col) && slices.Contains(to.Capabilities, string(onion.KindSearch)) {
		to.Onions = cloneOnions(to.Onions)
		to.Onions[string(onion.KindSearch)] = rewrite.StrongestLayer(onion.KindSearch)
	}
	return nil
}

func cloneOnions(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// indexRebuild is an index over converted columns and what replaces it.
type indexRebuild struct {
	old        string // its name
	constraint string // the UNIQUE or PRIMARY KEY constraint it backs
	primary    bool
	builds     []indexBuild // none: dropped (a companion rebuilt with its sibling, a search index a decrypted column cannot have)
	note       string       // why it is dropped
}

// indexBuild is one index built over the new form before the switch.
type indexBuild struct {
	temp  string // its name until the switch
	final string // its name after
	sql   string // CREATE INDEX CONCURRENTLY over the shadow columns
}

// converted maps the physical columns the rewrite replaces to their job
// and the suffix of the cell ("" for a plaintext column).
type converted map[string]struct {
	j      *job
	suffix string
}

func (ru *run) converted() converted {
	m := converted{}
	for _, j := range ru.jobs {
		if j.old == nil {
			m[j.plain] = struct {
				j      *job
				suffix string
			}{j, ""}
			continue
		}
		for _, pc := range j.old.cells {
			m[pc.Name] = struct {
				j      *job
				suffix string
			}{j, pc.Suffix}
		}
	}
	return m
}

// shadowName is the name the rewrite's new form of j answers to before
// the switch, as a column of the table planned for the indexes.
func (j *job) shadowName() string {
	if j.kind == Reencrypt {
		return j.name + NextSuffix
	}
	return j.name
}

// planIndexes plans the rebuild of every index over ru's converted
// columns; t is the table as the catalog has it now (every column plain
// for a table being registered). trgm says whether gin_trgm_ops exists.
func planIndexes(ru *run, t *catalog.Table, indexes []serverIndex, trgm bool) ([]indexRebuild, error) {
	conv := ru.converted()
	after := t.Clone()
	for _, j := range ru.jobs {
		i := slices.IndexFunc(after.Columns, func(c catalog.Column) bool { return c.Name == j.name })
		if i < 0 {
			return nil, fmt.Errorf("column %s is not in the catalog's table %s", j.name, t.Name)
		}
		switch j.kind {
		case Decrypt:
			c := after.Columns[i]
			after.Columns[i] = catalog.Column{ID: c.ID, Position: c.Position, Name: j.name, Type: c.Type, Policy: catalog.Plain}
		default:
			to := j.to
			to.Name, to.Position = j.shadowName(), after.Columns[i].Position
			after.Columns[i] = to
		}
	}
	var out []indexRebuild
	for _, x := range indexes {
		if strings.HasPrefix(x.name, tempIndexPrefix) {
			continue // one of ours (stray is)
		}
		touched := slices.ContainsFunc(x.cols, func(c string) bool { _, ok := conv[c]; return ok })
		if !touched {
			continue
		}
		ir := indexRebuild{old: x.name, constraint: x.constraint, primary: x.contype == "p"}
		switch {
		case x.contype == "x":
			return nil, fmt.Errorf("exclusion constraint %s over a column of %s cannot follow it into its new form\nhint: drop it, then run again", x.constraint, t.Name)
		case x.exprs:
			return nil, fmt.Errorf("index %s of %s has expressions or a predicate over a column the rewrite converts: the server would evaluate them over the stored form\nhint: drop it, then run again", x.name, t.Name)
		}
		companion := slices.ContainsFunc(x.keys, func(c string) bool { v, ok := conv[c]; return ok && v.suffix == "_ord" })
		search := slices.ContainsFunc(x.keys, func(c string) bool { v, ok := conv[c]; return ok && v.suffix == "_srch" })
		switch {
		case companion:
			ir.note = "the Ord companion of an index over the Eq onion, rebuilt with it"
			out = append(out, ir)
			continue
		case search && !trgm && slices.ContainsFunc(ru.jobs, func(j *job) bool { return j.kind == Decrypt }):
			ir.note = "a search index; its plaintext form (gin_trgm_ops) needs the pg_trgm extension"
			out = append(out, ir)
			continue
		}
		sts, err := rewrite.Parse(x.def)
		if err != nil || len(sts) != 1 || sts[0].Tree.GetStmt().GetIndexStmt() == nil {
			return nil, fmt.Errorf("reading index %s of %s: %v", x.name, t.Name, err)
		}
		is := sts[0].Tree.GetStmt().GetIndexStmt()
		seen := map[string]bool{}
		logical := func(name string) (string, string, bool) {
			v, ok := conv[name]
			if !ok {
				return name, "", false
			}
			return v.j.shadowName(), v.suffix, true
		}
		for _, n := range is.IndexParams {
			e := n.GetIndexElem()
			if e == nil || e.Name == "" {
				return nil, fmt.Errorf("index %s of %s: an element that is not a column", x.name, t.Name)
			}
			name, suffix, ok := logical(e.Name)
			if !ok {
				continue
			}
			e.Name = name
			if suffix == "_srch" {
				e.Opclass = []*pg_query.Node{pg_query.MakeStrNode("gin_trgm_ops")}
			}
		}
		var include []*pg_query.Node
		for _, n := range is.IndexIncludingParams {
			e := n.GetIndexElem()
			name, suffix, ok := logical(e.GetName())
			if ok && suffix != "" && suffix != "_eq" {
				continue // the other cells of an INCLUDEd encrypted column come with it
			}
			if name == rewrite.SaltColumn || seen[name] {
				continue // added by the planner with an encrypted column
			}
			seen[name] = true
			e.Name = name
			include = append(include, n)
		}
		is.IndexIncludingParams = include
		is.Idxname = tempIndexName(t.ID, x.name)
		is.Concurrent, is.IfNotExists = true, false
		sql, err := sts[0].Deparse()
		if err != nil {
			return nil, fmt.Errorf("index %s of %s: %w", x.name, t.Name, err)
		}
		logicalSt, err := rewrite.Parse(sql)
		if err != nil || len(logicalSt) != 1 {
			return nil, fmt.Errorf("index %s of %s: %v", x.name, t.Name, err)
		}
		planned, err := rewrite.PlanIndex(logicalSt[0], after)
		if err != nil {
			return nil, fmt.Errorf("index %s of %s cannot follow its columns into their new form: %w", x.name, t.Name, err)
		}
		built, err := rewrite.Parse(planned)
		if err != nil {
			return nil, fmt.Errorf("index %s of %s: %w", x.name, t.Name, err)
		}
		for i, b := range built {
			temp := b.Tree.GetStmt().GetIndexStmt().GetIdxname()
			final := x.name
			if i > 0 {
				final = derivedName(x.name, strings.TrimPrefix(temp, is.Idxname))
			}
			ir.builds = append(ir.builds, indexBuild{temp: temp, final: final, sql: b.SQL})
		}
		out = append(out, ir)
	}
	return out, nil
}

// tempIndexName names the rebuild of index old of table id until the
// switch: the same on every run, so that a resumed rewrite finds it.
func tempIndexName(id catalog.ID, old string) string {
	h := sha256.Sum256(append(id[:len(id):len(id)], old...))
	return tempIndexPrefix + hex.EncodeToString(h[:8])
}

// tempIndexPrefix starts the names of rebuilt indexes until the switch.
const tempIndexPrefix = "pgonion_next_"

// strayIndexes are the indexes named as rebuilds that ru does not build:
// left by a run killed before its switch under another plan. The switch
// drops them.
func strayIndexes(indexes []serverIndex, irs []indexRebuild) []string {
	var out []string
	for _, x := range indexes {
		if !strings.HasPrefix(x.name, tempIndexPrefix) {
			continue
		}
		ours := slices.ContainsFunc(irs, func(ir indexRebuild) bool {
			return slices.ContainsFunc(ir.builds, func(b indexBuild) bool { return b.temp == x.name })
		})
		if !ours {
			out = append(out, x.name)
		}
	}
	return out
}

// derivedName is name+suffix, name shortened (on a character boundary)
// to fit PostgreSQL's 63-byte identifiers.
func derivedName(name, suffix string) string {
	for len(name)+len(suffix) > 63 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name + suffix
}

// buildIndexes builds the new indexes over the shadow columns (outside a
// transaction: CONCURRENTLY lets the application write meanwhile); one a
// killed run left invalid is built again.
func (r *Rewriter) buildIndexes(ctx context.Context, ru *run) error {
	for _, ir := range ru.indexes {
		for _, b := range ir.builds {
			var valid *bool
			err := r.Conn.QueryRow(ctx, `SELECT (SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
				WHERE c.relname = $1 AND c.relnamespace = $2::regnamespace)`, b.temp, quoteIdent(ru.plan.Schema)).Scan(&valid)
			if err != nil {
				return fmt.Errorf("checking index %s: %w", b.temp, err)
			}
			if valid != nil && *valid {
				continue
			}
			if valid != nil {
				if _, err := r.Conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+qualified(ru.plan.Schema, b.temp)); err != nil {
					return fmt.Errorf("dropping the invalid index %s a killed run left: %w", b.temp, err)
				}
			}
			if _, err := r.Conn.Exec(ctx, b.sql); err != nil {
				return fmt.Errorf("building the new form of index %s: %w", ir.old, err)
			}
		}
	}
	return nil
}

// indexSwap is the DDL that puts the rebuilt indexes in place at the
// switch: drops, to run before the columns change, and adds, after.
func (ru *run) indexSwap() (drops, adds []string) {
	for _, name := range ru.strays {
		drops = append(drops, "DROP INDEX IF EXISTS "+qualified(ru.plan.Schema, name))
	}
	for _, ir := range ru.indexes {
		if ir.constraint != "" {
			drops = append(drops, fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s", ru.rel, quoteIdent(ir.constraint)))
		} else {
			drops = append(drops, "DROP INDEX IF EXISTS "+qualified(ru.plan.Schema, ir.old))
		}
		for i, b := range ir.builds {
			if i == 0 && ir.constraint != "" {
				kind := "UNIQUE"
				if ir.primary {
					kind = "PRIMARY KEY"
				}
				adds = append(adds, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s %s USING INDEX %s", ru.rel, quoteIdent(ir.constraint), kind, quoteIdent(b.temp)))
				continue
			}
			adds = append(adds, fmt.Sprintf("ALTER INDEX %s RENAME TO %s", qualified(ru.plan.Schema, b.temp), quoteIdent(b.final)))
		}
	}
	return drops, adds
}

// describeIndexes says what happens to the indexes, for the plan.
func describeIndexes(irs []indexRebuild) []string {
	var out []string
	for _, ir := range irs {
		what := "index " + ir.old
		if ir.constraint != "" {
			what = "constraint " + ir.constraint
		}
		if len(ir.builds) == 0 {
			out = append(out, fmt.Sprintf("%s: dropped (%s)", what, ir.note))
			continue
		}
		var names []string
		for _, b := range ir.builds {
			names = append(names, b.final)
		}
		out = append(out, fmt.Sprintf("%s: rebuilt over the new form (%s)", what, strings.Join(names, ", ")))
	}
	return out
}

// planRunIndexes plans ru's index rebuilds (planIndexes) and says what
// they are in its plan.
func (r *Rewriter) planRunIndexes(ctx context.Context, tx pgx.Tx, ru *run, t *catalog.Table, indexes []serverIndex) error {
	if len(ru.jobs) == 0 {
		return nil
	}
	var trgm bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_opclass WHERE opcname = 'gin_trgm_ops')").Scan(&trgm); err != nil {
		return err
	}
	var err error
	if ru.indexes, err = planIndexes(ru, t, indexes, trgm); err != nil {
		return err
	}
	ru.strays = strayIndexes(indexes, ru.indexes)
	ru.plan.Indexes = describeIndexes(ru.indexes)
	return nil
}
