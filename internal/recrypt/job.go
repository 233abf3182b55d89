package recrypt

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/schemes/hom"
)

// job is one column of a rewrite.
type job struct {
	kind Kind
	name string         // the logical column
	to   catalog.Column // its catalog entry after the cutover
	enc  catalog.Column // its encrypted form: to for Encrypt, the current entry for Decrypt

	oc     *onion.Column
	typ    onion.Type
	cells  []onion.PhysicalColumn // physical columns of enc, the salt override included
	plain  string                 // the physical plaintext column (the source for Encrypt, the shadow for Decrypt)
	attnum int16                  // of the column's first physical column on the server, for the trigger's name
}

// cell returns the physical column of enc with suffix, or "".
func (j *job) cell(suffix string) string {
	for _, pc := range j.cells {
		if pc.Suffix == suffix {
			return pc.Name
		}
	}
	return ""
}

// valueCells are the cells that carry the value (one of them is non-NULL
// exactly when the value is): Eq, and Add for a column that may have
// been incremented.
func (j *job) valueCells() []string {
	out := []string{j.cell("_eq")}
	if a := j.cell("_add"); a != "" && j.enc.Incremented {
		out = append(out, a)
	}
	return out
}

// pending is the SQL condition of a row this job still has to convert.
func (j *job) pending() string {
	var present []string
	for _, c := range j.valueCells() {
		present = append(present, quoteIdent(c)+" IS NOT NULL")
	}
	if j.kind == Encrypt {
		return fmt.Sprintf("(%s IS NOT NULL AND %s IS NULL)", quoteIdent(j.plain), quoteIdent(j.cell("_eq")))
	}
	return fmt.Sprintf("(%s IS NULL AND (%s))", quoteIdent(j.plain), strings.Join(present, " OR "))
}

// sources are the physical columns the old form is written to: the
// trigger empties the shadow when one of them is set.
func (j *job) sources() []string {
	if j.kind == Encrypt {
		return []string{j.plain}
	}
	var out []string
	for _, pc := range j.cells {
		out = append(out, pc.Name)
	}
	return out
}

// shadows are the physical columns of the new form.
func (j *job) shadows() []string {
	if j.kind == Decrypt {
		return []string{j.plain}
	}
	var out []string
	for _, pc := range j.cells {
		out = append(out, pc.Name)
	}
	return out
}

// triggerName is the name of the job's trigger.
func (j *job) triggerName() string { return fmt.Sprintf("pgonion_rewrite_%d", j.attnum) }

// newJob completes a job from its encrypted form.
func (r *Rewriter) newJob(kind Kind, to, enc catalog.Column) (*job, error) {
	j := &job{kind: kind, name: enc.Name, to: to, enc: enc, plain: enc.Name}
	var err error
	if j.typ, err = rewrite.ColumnType(&enc); err != nil {
		return nil, err
	}
	if j.cells, err = rewrite.PhysicalColumns(&enc); err != nil {
		return nil, err
	}
	if j.cell("_eq") == "" {
		return nil, fmt.Errorf("recrypt: column %s has no Eq onion", enc.Name)
	}
	if j.oc, err = r.cipher(&enc, j.typ); err != nil {
		return nil, err
	}
	return j, nil
}

// cipher returns the onion cipher of encrypted column c, as the proxy
// builds it (engine.Engine.column).
func (r *Rewriter) cipher(c *catalog.Column, t onion.Type) (*onion.Column, error) {
	kinds := make([]onion.Kind, 0, len(c.Onions))
	for k := range c.Onions {
		kinds = append(kinds, onion.Kind(k))
	}
	slices.Sort(kinds)
	var enc *hom.Encrypter
	if slices.Contains(kinds, onion.KindAdd) {
		if r.Keys.HomKey == nil {
			return nil, fmt.Errorf("column %s has an Add onion, but the key store holds no Paillier key", c.Name)
		}
		if r.hom == nil {
			var err error
			if r.hom, err = hom.NewEncrypter(r.Keys.HomKey, hom.EncrypterOptions{PoolSize: 256, Workers: max(1, runtime.GOMAXPROCS(0)-1)}); err != nil {
				return nil, err
			}
		}
		enc = r.hom
	}
	var joinID []byte
	if c.JoinGroup != "" {
		joinID = []byte(c.JoinGroup)
	}
	oc, err := onion.NewColumnFormat(t, c.ID[:], joinID, kinds, onion.Format(c.CellFormat()), r.Keys.Deriver, r.Keys.HomKey, enc)
	if err != nil {
		return nil, fmt.Errorf("keys of column %s: %w", c.Name, err)
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
		slices.Equal(a.Capabilities, b.Capabilities) && mapsEqual(a.Onions, b.Onions) &&
		a.JoinGroup == b.JoinGroup && a.CellFormat() == b.CellFormat()
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
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
