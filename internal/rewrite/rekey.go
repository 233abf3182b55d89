package rewrite

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// Rekey is a re-keying a statement needs (CryptDB's JOIN-ADJ, done by
// re-encryption): column Column of Table moves into join group Group, so
// that the server can compare it with the group's other columns.
type Rekey struct {
	Table  *catalog.Table
	Column *catalog.Column
	Group  string
}

// RekeyError is what the planners return for a comparison of two
// encrypted columns under different keys whose policies allow re-keying
// one or both into a shared join group: once the re-keyings it lists are
// done, planning the statement again succeeds. Its message is the
// refusal for a caller that does not re-key (Refusal).
type RekeyError struct {
	Rekeys []Rekey
	// Reveals says what the server learns from the re-keying.
	Reveals string
	refusal error
}

func (e *RekeyError) Error() string { return e.refusal.Error() }

// Refusal is the statement's refusal (SQLSTATE 0A000) without re-keying.
func (e *RekeyError) Refusal() error { return e.refusal }

// rekeyFor returns the re-keyings that let the server compare a and b
// with op, or nil when their policies or types do not allow it: both must
// be encrypted (a sensitive column never leaves RND), comparable on one
// key, with Ord onions for an order comparison, not left in their Add
// onion by an increment, and not both already in (different) groups: a
// column moved out of its group could no longer be compared with the
// columns it was grouped with.
func rekeyFor(a, b *encCol, op string, refusal error) error {
	if a.col.Policy != catalog.Encrypted || b.col.Policy != catalog.Encrypted || a.col.Incremented || b.col.Incremented {
		return nil
	}
	at, aerr := parseType(a.col.Type)
	bt, berr := parseType(b.col.Type)
	if aerr != nil || berr != nil {
		return nil
	}
	reveals := fmt.Sprintf("which values of %s and %s are equal", a.name(), b.name())
	if op == "=" || op == "<>" {
		if !onion.EqJoinable(at, bt) {
			return nil
		}
	} else {
		_, ao := a.col.Onions[string(onion.KindOrd)]
		_, bo := b.col.Onions[string(onion.KindOrd)]
		if !ao || !bo || !onion.OrdJoinable(at, bt) {
			return nil
		}
		reveals = fmt.Sprintf("how the values of %s and %s compare (equality and order)", a.name(), b.name())
	}
	var rk []Rekey
	switch {
	case a.col.JoinGroup == "" && b.col.JoinGroup == "":
		group := NewJoinGroupName(a.col.ID, b.col.ID)
		rk = []Rekey{{a.table, a.col, group}, {b.table, b.col, group}}
	case a.col.JoinGroup == "":
		rk = []Rekey{{a.table, a.col, b.col.JoinGroup}}
	case b.col.JoinGroup == "":
		rk = []Rekey{{b.table, b.col, a.col.JoinGroup}}
	default:
		return nil
	}
	// One column compared with itself under two aliases needs nothing;
	// the same column twice in the list is moved once.
	rk = slices.CompactFunc(rk, func(x, y Rekey) bool { return x.Column.ID == y.Column.ID })
	return &RekeyError{Rekeys: rk, Reveals: reveals + " across the two columns (once their onions are peeled to DET" + map[bool]string{true: ")", false: " and OPE)"}[op == "=" || op == "<>"], refusal: refusal}
}

// NewJoinGroupName names the join group the proxy creates for two columns
// under their own keys: the same for the same pair, whichever proxy asks.
func NewJoinGroupName(a, b catalog.ID) string {
	if string(a[:]) > string(b[:]) {
		a, b = b, a
	}
	h := sha256.Sum256(append(a[:len(a):len(a)], b[:]...))
	return "adj_" + hex.EncodeToString(h[:6])
}
