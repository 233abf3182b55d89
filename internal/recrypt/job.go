package recrypt

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/procs"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/schemes/hom"
)

// NextSuffix names the shadow cells of a re-encryption: c's new cells
// are built as c__next__eq, ... and renamed c__eq, ... at the switch.
const NextSuffix = "__next"

// form is an encrypted form of a column: its cells on the server and
// the cipher that reads and writes them.
type form struct {
	col   catalog.Column
	oc    *onion.Column
	cells []onion.PhysicalColumn // the salt override included
}

// cell returns the physical column with suffix, or "".
func (f *form) cell(suffix string) string {
	for _, pc := range f.cells {
		if pc.Suffix == suffix {
			return pc.Name
		}
	}
	return ""
}

// names are the form's physical columns.
func (f *form) names() []string {
	out := make([]string, len(f.cells))
	for i, pc := range f.cells {
		out[i] = pc.Name
	}
	return out
}

// present is the SQL condition of a row whose value is not NULL in this
// form: its Eq cell is set, or its Add cell, where an increment left the
// value only there.
func (f *form) present() string {
	conds := []string{quoteIdent(f.cell("_eq")) + " IS NOT NULL"}
	if a := f.cell("_add"); a != "" && f.col.Incremented {
		conds = append(conds, quoteIdent(a)+" IS NOT NULL")
	}
	return "(" + strings.Join(conds, " OR ") + ")"
}

// job is one column of a rewrite: from its old form to its new one; a
// nil form is the plaintext column.
type job struct {
	kind   Kind
	name   string         // the logical column
	to     catalog.Column // its catalog entry after the switch
	old    *form          // nil for Encrypt
	new    *form          // nil for Decrypt
	typ    onion.Type
	plain  string // the physical plaintext column (the source for Encrypt, the shadow for Decrypt)
	attnum int16  // of the column's first old physical column on the server, for the trigger's name
}

// pending is the SQL condition of a row this job still has to convert.
func (j *job) pending() string {
	switch {
	case j.old == nil:
		return fmt.Sprintf("(%s IS NOT NULL AND %s IS NULL)", quoteIdent(j.plain), quoteIdent(j.new.cell("_eq")))
	case j.new == nil:
		return fmt.Sprintf("(%s IS NULL AND %s)", quoteIdent(j.plain), j.old.present())
	}
	return fmt.Sprintf("(%s AND %s IS NULL)", j.old.present(), quoteIdent(j.new.cell("_eq")))
}

// sources are the physical columns the old form is written to: the
// trigger empties the shadow when one of them is set.
func (j *job) sources() []string {
	if j.old == nil {
		return []string{j.plain}
	}
	return j.old.names()
}

// shadows are the physical columns of the new form.
func (j *job) shadows() []string {
	if j.new == nil {
		return []string{j.plain}
	}
	return j.new.names()
}

// triggerName is the name of the job's trigger.
func (j *job) triggerName() string { return fmt.Sprintf("pgonion_rewrite_%d", j.attnum) }

// newJob makes the job turning column from into to (kind says which of
// them is plaintext).
func (r *Rewriter) newJob(kind Kind, from, to catalog.Column) (*job, error) {
	j := &job{kind: kind, name: from.Name, to: to, plain: from.Name}
	var err error
	switch kind {
	case Encrypt:
		j.new, err = r.form(to, to.Name, true)
	case Decrypt:
		j.old, err = r.form(from, from.Name, false)
	case Reencrypt:
		if j.old, err = r.form(from, from.Name, false); err == nil {
			j.new, err = r.form(to, to.Name+NextSuffix, true)
		}
	default:
		err = fmt.Errorf("recrypt: unknown rewrite %q", kind)
	}
	if err != nil {
		return nil, err
	}
	f := j.new
	if f == nil {
		f = j.old
	}
	j.typ = f.oc.Type()
	return j, nil
}

// encrypt returns the cells of v in form f, at its onions' layers: an
// onion the target keeps peeled (DET, OPE) gets what peeling its RND
// layer on the server would leave, as the proxy writes it.
func (f *form) encrypt(v onion.Value, salt []byte) (onion.Cells, error) {
	eq, ord := onion.LayerRND, onion.LayerRND
	if f.col.Onions[string(onion.KindEq)] == string(onion.LayerDET) {
		eq = onion.LayerDET
	}
	if f.col.Onions[string(onion.KindOrd)] == string(onion.LayerOPE) {
		ord = onion.LayerOPE
	}
	return f.oc.EncryptAt(v, salt, eq, ord)
}

// form returns the encrypted form of column c with its cells named after
// prefix (c.Name, or a shadow's name); writes says whether the rewrite
// encrypts into it (or only decrypts from it).
func (r *Rewriter) form(c catalog.Column, prefix string, writes bool) (*form, error) {
	f := &form{col: c}
	named := c
	named.Name = prefix
	var err error
	if f.cells, err = rewrite.PhysicalColumns(&named); err != nil {
		return nil, err
	}
	if f.cell("_eq") == "" {
		return nil, fmt.Errorf("recrypt: column %s has no Eq onion", c.Name)
	}
	for _, pc := range f.cells {
		if len(pc.Name) > 63 {
			return nil, fmt.Errorf("column %s: its name is too long for the rewrite's shadow column %s (63 bytes at most)", c.Name, pc.Name)
		}
	}
	t, err := rewrite.ColumnType(&c)
	if err != nil {
		return nil, err
	}
	if f.oc, err = r.cipher(&c, t, writes); err != nil {
		return nil, err
	}
	return f, nil
}

// cipher returns the onion cipher of encrypted column c, as the proxy
// builds it (engine.Engine.column), under the keys of its root key
// generation. A cipher the rewrite writes with gets the pooled Paillier
// encrypter of its generation.
func (r *Rewriter) cipher(c *catalog.Column, t onion.Type, writes bool) (*onion.Column, error) {
	kinds := make([]onion.Kind, 0, len(c.Onions))
	for k := range c.Onions {
		kinds = append(kinds, onion.Kind(k))
	}
	slices.Sort(kinds)
	d, err := r.Keys.Ring.Deriver(c.RootGeneration)
	if err != nil {
		return nil, fmt.Errorf("column %s: %w", c.Name, err)
	}
	homKey := r.Keys.Ring.Paillier(c.RootGeneration)
	var enc *hom.Encrypter
	if slices.Contains(kinds, onion.KindAdd) {
		if homKey == nil {
			return nil, fmt.Errorf("column %s has an Add onion, but the key store holds no Paillier key of root key generation %d", c.Name, c.RootGeneration)
		}
		if writes {
			if r.hom == nil {
				r.hom = map[int]*hom.Encrypter{}
			}
			if enc = r.hom[c.RootGeneration]; enc == nil {
				if enc, err = hom.NewEncrypter(homKey, hom.EncrypterOptions{PoolSize: 256, Workers: max(1, procs.Full()-1)}); err != nil {
					return nil, err
				}
				r.hom[c.RootGeneration] = enc
			}
		}
	}
	oc, err := onion.NewColumnFormat(t, c.KeyID(), c.JoinID(), kinds, onion.Format(c.CellFormat()), d, homKey, enc)
	if err != nil {
		return nil, fmt.Errorf("keys of column %s: %w", c.Name, err)
	}
	if t.Base == onion.Enum {
		labels := onion.FixedEnumLabels{Name: t.EnumName, Orders: map[string]float32{}}
		rows, err := r.Conn.Query(context.Background(), `SELECT enumlabel::text, enumsortorder FROM pg_catalog.pg_enum WHERE enumtypid = $1`, t.EnumOID)
		if err != nil {
			return nil, fmt.Errorf("labels of enum %s: %w", t.EnumName, err)
		}
		for rows.Next() {
			var l string
			var so float32
			if err := rows.Scan(&l, &so); err != nil {
				rows.Close()
				return nil, err
			}
			labels.Orders[l] = so
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("labels of enum %s: %w", t.EnumName, err)
		}
		oc.SetEnumLabels(labels)
	}
	return oc, nil
}

// targetMAC authenticates a rewrite's recorded kind and target, so that a
// resumed run cannot be steered to another form by whoever can write
// pgonion.rewrites.
func targetMAC(key []byte, table catalog.ID, kind Kind, target []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("pgonion rewrite v1\x00"))
	m.Write(table[:])
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write(target)
	return m.Sum(nil)
}

// encodeTarget is the recorded form of a target column.
func encodeTarget(c catalog.Column) ([]byte, error) { return json.Marshal(c) }

// sameForm reports whether a and b describe the same stored form.
func sameForm(a, b catalog.Column) bool {
	return a.ID == b.ID && a.Name == b.Name && a.Type == b.Type && a.Policy == b.Policy &&
		slices.Equal(a.Capabilities, b.Capabilities) && maps.Equal(a.Onions, b.Onions) &&
		a.JoinGroup == b.JoinGroup && a.CellFormat() == b.CellFormat() && a.KeyVersion == b.KeyVersion && a.GroupKey() == b.GroupKey() && a.Incremented == b.Incremented
}

// Target returns the encrypted form the proxy would give column c of
// schema.table if the table were created now under policy (as CREATE
// TABLE through the proxy does: the same capabilities, onions, layers,
// join group and cell format). A plain policy gives c itself.
func Target(schema, table string, c catalog.Column, policy rewrite.PolicyFunc) (catalog.Column, error) {
	st, err := rewrite.Parse(fmt.Sprintf("CREATE TABLE %s (%s %s)", quoteIdent(table), quoteIdent(c.Name), c.Type))
	if err != nil || len(st) != 1 {
		return catalog.Column{}, fmt.Errorf("recrypt: type %q of column %s.%s: %v", c.Type, table, c.Name, err)
	}
	p, err := rewrite.PlanCreate(st[0], schema, policy)
	if err != nil {
		return catalog.Column{}, err
	}
	out := p.Table.Columns[0]
	out.ID, out.Position = c.ID, c.Position
	return out, nil
}
