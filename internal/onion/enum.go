package onion

import (
	"errors"
	"math"
)

// Enums. A column of an enum type stores its label; PostgreSQL orders
// an enum by its labels' sort order (pg_enum.enumsortorder, a real that
// ALTER TYPE ... ADD VALUE never changes for existing labels), so the
// Ord onion encrypts the sort order and equality is the label's. The
// labels live on the server: the caller gives the Column an EnumLabels
// (SetEnumLabels), which also rejects a label the type does not have,
// as enum_in does. This package does not compare enums itself (Compare
// orders labels by bytes, not by the type's order).

// EnumType returns the type of an enum: its name as format_type prints
// it and its OID.
func EnumType(name string, oid uint32) Type {
	return Type{Base: Enum, EnumName: name, EnumOID: oid}
}

// EnumLabels are an enum type's labels.
type EnumLabels interface {
	// Order returns label's sort order, or PostgreSQL's error for a
	// label the type does not have (22P02).
	Order(label string) (float32, error)
	// Label returns the label of a sort order.
	Label(order float32) (string, bool)
}

// maxEnumLabel is the longest label (NAMEDATALEN - 1 bytes).
const maxEnumLabel = 63

// SetEnumLabels gives an enum column its type's labels; it must be
// called before the column encrypts or decrypts an Ord cell.
func (c *Column) SetEnumLabels(l EnumLabels) { c.enum = l }

// checkEnum rejects a label the column's enum does not have.
func (c *Column) checkEnum(v Value) error {
	if c.t.Base != Enum || v.IsNull() {
		return nil
	}
	if c.enum == nil {
		return errors.New("onion: an enum column without its labels")
	}
	_, err := c.enum.Order(v.s)
	return err
}

// enumOrdinal is the Ord onion's integer for a checked label.
func (c *Column) enumOrdinal(v Value) int64 {
	so, _ := c.enum.Order(v.s)
	return float8Ordinal(int64(math.Float64bits(float64(so))))
}

// enumFromOrdinal inverts enumOrdinal.
func (c *Column) enumFromOrdinal(x int64) (Value, bool) {
	if c.enum == nil {
		return Value{}, false
	}
	label, ok := c.enum.Label(float32(math.Float64frombits(uint64(float8FromOrdinal(x)))))
	return TextValue(label), ok
}

// FixedEnumLabels is an enum's labels read once: for work that reads
// and writes only labels already stored.
type FixedEnumLabels struct {
	Name   string // the type's name, for messages
	Orders map[string]float32
}

// Order implements EnumLabels.
func (f FixedEnumLabels) Order(label string) (float32, error) {
	if so, ok := f.Orders[label]; ok {
		return so, nil
	}
	return 0, pgErr(codeInvalidTextRep, "invalid input value for enum %s: \"%s\"", f.Name, label)
}

// Label implements EnumLabels.
func (f FixedEnumLabels) Label(order float32) (string, bool) {
	for l, so := range f.Orders {
		if so == order {
			return l, true
		}
	}
	return "", false
}
