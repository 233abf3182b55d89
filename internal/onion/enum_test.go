package onion

import (
	"bytes"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestEnumColumn: an enum column's Ord onion follows the labels' sort
// order (not their bytes), a MIN/MAX read from the Ord onion gives the
// label back, and a label the type lacks is refused as enum_in does.
func TestEnumColumn(t *testing.T) {
	typ := EnumType("mood", 16390)
	if err := typ.Check(); err != nil {
		t.Fatal(err)
	}
	if typ.OID() != 16390 || typ.Size() != 4 || typ.String() != "mood" {
		t.Errorf("OID %d, Size %d, String %q", typ.OID(), typ.Size(), typ)
	}
	c := newColumn(t, typ, "enum", KindEq, KindOrd)
	labels := FixedEnumLabels{Name: "mood", Orders: map[string]float32{"sad": 1, "ok": 2, "happy": 3, "meh": 1.5}}
	c.SetEnumLabels(labels)
	salt := bytes.Repeat([]byte{7}, SaltSize)
	order := []string{"sad", "meh", "ok", "happy"} // by sort order; by bytes: happy, meh, ok, sad
	var prev []byte
	for _, l := range order {
		ope, err := c.OrdOPE(TextValue(l), Exact)
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil && bytes.Compare(prev, ope) >= 0 {
			t.Errorf("%s does not sort after the label before it", l)
		}
		prev = ope
		v, err := c.DecryptOrd(ope, nil, LayerOPE)
		if err != nil || v != TextValue(l) {
			t.Errorf("DecryptOrd of %s: %#v, %v", l, v, err)
		}
		cells, err := c.Encrypt(TextValue(l), salt)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := c.Decrypt(cells, salt); err != nil || v != TextValue(l) {
			t.Errorf("Decrypt of %s: %#v, %v", l, v, err)
		}
	}
	var pe *pgconn.PgError
	if _, err := c.Encrypt(TextValue("glad"), salt); !errors.As(err, &pe) || pe.Code != "22P02" || pe.Message != `invalid input value for enum mood: "glad"` {
		t.Errorf("an unknown label: %v", err)
	}
	if _, err := c.EqDET(TextValue("glad")); !errors.As(err, &pe) || pe.Code != "22P02" {
		t.Errorf("an unknown label compared: %v", err)
	}
	if !EqJoinable(typ, typ) || EqJoinable(typ, EnumType("other", 16400)) || OrdJoinable(typ, EnumType("other", 16400)) {
		t.Error("two enum types must not share a join group")
	}
}
