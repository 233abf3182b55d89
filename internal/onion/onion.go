package onion

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sync"

	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/pglike"
	"github.com/pgonion/pgonion/internal/schemes/det"
	"github.com/pgonion/pgonion/internal/schemes/hom"
	"github.com/pgonion/pgonion/internal/schemes/ope"
	"github.com/pgonion/pgonion/internal/schemes/rnd"
	"github.com/pgonion/pgonion/internal/schemes/search"
)

// Kind is an onion kind: the physical column that serves one capability.
type Kind string

// The onion kinds.
const (
	KindEq     Kind = "eq"
	KindOrd    Kind = "ord"
	KindAdd    Kind = "add"
	KindSearch Kind = "search"
)

// Layer is an encryption layer of an onion.
type Layer string

// The layers.
const (
	LayerRND    Layer = "rnd"
	LayerDET    Layer = "det"
	LayerOPE    Layer = "ope"
	LayerHOM    Layer = "hom"
	LayerSearch Layer = "search"
)

// Layers returns the layers of an onion kind, outermost (strongest) first.
func (k Kind) Layers() []Layer {
	switch k {
	case KindEq:
		return []Layer{LayerRND, LayerDET}
	case KindOrd:
		return []Layer{LayerRND, LayerOPE}
	case KindAdd:
		return []Layer{LayerHOM}
	case KindSearch:
		return []Layer{LayerSearch}
	}
	return nil
}

// Capability returns the capability the onion serves.
func (k Kind) Capability() Capability { return Capability(k) }

// SaltSize is the size of the per-row salt from which the RND layers
// derive their IVs (rnd.SaltSize; a bytea column shared by the row).
const SaltSize = rnd.SaltSize

// Key derivation labels: Deriver.Derive(columnID, onion, layer, size).
const (
	labelVal = "val" // the authoritative value copy of lossy types
	// The DET and OPE keys of a join group: Derive(joinID, labelJoinEq,
	// "det", ...) and Derive(joinID, labelJoinOrd, "ope", ...). Column
	// keys never use these onion labels, so group keys and column keys are
	// always derived from different HKDF info strings.
	labelJoinEq  = "join-eq"
	labelJoinOrd = "join-ord"
)

// Errors of the onion layer.
var (
	// ErrOrdRange is returned by OrdOPE for a value outside the Ord onion's
	// domain (e.g. 100000 for a smallint column outside a join group, whose
	// domain is int32):
	// the caller folds such comparisons to constants.
	ErrOrdRange = errors.New("onion: value outside the order-preserving domain of the column")
	// ErrOrdPrefix is returned by DecryptOrd for a text column: its Ord
	// onion holds only the order-preserving encryption of an 8-byte prefix
	// of the value (see OrdIsPrefix), not the value. Decrypt the Eq onion
	// instead (DecryptOrdPrefix gives the prefix).
	ErrOrdPrefix = errors.New("onion: the Ord onion of a text column holds only an 8-byte prefix of the value and cannot be decrypted to it: decrypt the Eq onion")
)

// Cells holds the physical values of one logical value: one field per
// physical column. nil is SQL NULL.
type Cells struct {
	Eq     []byte  // Eq onion: RND(DET(EqualityKey(v))), bytea (see Format)
	Ord    []byte  // Ord onion: RND(OPE(ordinal(v))), bytea or uuid (see Format)
	Add    []byte  // Add onion: HOM(integer form of v), bytea
	Search []int64 // Search onion: sorted keyed tokens, bigint[]
	// Val is the authoritative copy of the value for types whose
	// EqualityKey loses information (unconstrained numeric, bpchar without
	// length): AES-GCM of the binary form, bound to column and row. It is
	// never peeled.
	Val []byte
}

// PhysicalColumn describes one physical column of an encrypted column.
type PhysicalColumn struct {
	Name    string // prefix + Suffix
	Suffix  string // "_eq", "_ord", "_add", "_srch", "_val"
	SQLType string // "bytea", "uuid" (see CellSQLType) or "bigint[]"
	Kind    Kind   // the onion it holds; "" for the value copy (_val)
}

// Column encrypts and decrypts the values of one logical column. It is
// safe for concurrent use.
type Column struct {
	t      Type
	kinds  []Kind
	joined bool // in a join group: DET and OPE keys are the group's

	eqRND, ordRND *rnd.Cipher
	eqDET         detCipher
	// compact: the Eq onion is FormatCompact's (det.Block inside
	// unpadded CBC of compactKey), not AES-SIV of the EqualityKey.
	compact bool
	eqBlock *det.Block // eqDET when compact
	// uuidOrd: the Ord onion is FormatUUID's (16-byte cells, unpadded
	// CBC, 8-byte OPE ciphertexts followed by ordPad).
	uuidOrd bool
	format  Format
	val     *rnd.AEAD
	ope32   *ope.Cipher32
	ope64   *ope.Cipher64
	homSK   *hom.PrivateKey
	homEnc  *hom.Encrypter
	tok     *search.Tokenizer

	eqRNDKey, ordRNDKey []byte // for peeling on the server (pgcrypto)

	opeCache detCache[int64, []byte]
	tokCache detCache[string, []int64]
	eqMemo   plainCache

	enum EnumLabels // an enum's labels (SetEnumLabels)
}

// detCipher is the DET layer of the Eq onion: det.Cipher or det.Block.
type detCipher interface {
	EncryptDeterministically(plaintext []byte) ([]byte, error)
	DecryptDeterministically(ciphertext []byte) ([]byte, error)
}

// NewColumn returns the encryptor of a column of type t with stable id
// columnID, with the onions of kinds, in no join group: it is
// NewColumnJoined(t, columnID, nil, kinds, d, homKey, homEnc).
func NewColumn(t Type, columnID []byte, kinds []Kind, d *keys.Deriver, homKey *hom.PrivateKey, homEnc *hom.Encrypter) (*Column, error) {
	return NewColumnJoined(t, columnID, nil, kinds, d, homKey, homEnc)
}

// NewColumnJoined returns the encryptor of a column of type t with stable
// id columnID, member of the join group joinID (nil or empty: none), with
// the onions of kinds. The Eq onion is always present: it is the copy
// Decrypt reads (with Val for lossy types), even for a column that never
// allows equality on the server (its Eq onion then stays at RND). Kinds
// must be capabilities of t (Type.Capabilities).
//
// Columns compared with each other on the server (a.x = b.y, a.d < b.e)
// must be in one join group: the keys of the Eq onion's DET layer and of
// the Ord onion's OPE layer are then derived from joinID, not columnID,
// with Deriver.Derive(joinID, "join-eq", "det", 64) and
// Deriver.Derive(joinID, "join-ord", "ope", 32), and the DET layer's
// associated data is joinID. The labels "join-eq" and "join-ord" are used
// only for join groups, so the key of a group never equals a key of a
// column, even if a join id equals a column id. The RND layers, the Val
// copy and the Search tokens keep per-column keys (a ciphertext of the
// Val copy or of an RND layer cannot be moved to another column of the
// group). The group of a column is part of its keys: moving a column to
// another group means re-encrypting its Eq and Ord onions.
//
// Within a group, equal values give equal DET ciphertexts when the types
// are EqJoinable (smallint, integer and bigint share one encoding), and
// OPE ciphertexts compare like the values when they are OrdJoinable: to
// make that hold across integer widths, smallint and integer columns of a
// group use the 64-bit OPE domain (16-byte Ord cells, like bigint), not the
// 32-bit one they use alone.
//
// homKey is needed for the Add onion (decryption of sums); homEnc, the
// fast pooled encrypter of the same key, may be nil (encryption then
// computes r^n directly, several times slower).
//
// The column has FormatLatest; NewColumnFormat gives another format.
func NewColumnJoined(t Type, columnID, joinID []byte, kinds []Kind, d *keys.Deriver, homKey *hom.PrivateKey, homEnc *hom.Encrypter) (*Column, error) {
	return NewColumnFormat(t, columnID, joinID, kinds, FormatLatest, d, homKey, homEnc)
}

// NewColumnFormat is NewColumnJoined for a column of format f, the format
// its cells were written in (recorded in the catalog). Under FormatCompact
// the DET layer of a compact type's Eq onion has its own key,
// Derive(id, "eq" or "join-eq", "det-block", 32).
func NewColumnFormat(t Type, columnID, joinID []byte, kinds []Kind, f Format, d *keys.Deriver, homKey *hom.PrivateKey, homEnc *hom.Encrypter) (*Column, error) {
	if err := t.Check(); err != nil {
		return nil, err
	}
	if !f.Valid() {
		return nil, fmt.Errorf("onion: unknown cell format %d", f)
	}
	if d == nil {
		return nil, errors.New("onion: no key deriver")
	}
	if len(columnID) == 0 {
		return nil, errors.New("onion: empty column id")
	}
	c := &Column{t: t, kinds: []Kind{KindEq}, joined: len(joinID) > 0, format: f}
	for _, k := range kinds {
		switch k {
		case KindEq, KindOrd, KindAdd, KindSearch:
		default:
			return nil, fmt.Errorf("onion: unknown onion kind %q", k)
		}
		if !t.Supports(k.Capability()) {
			return nil, fmt.Errorf("onion: type %s does not support %s", t, k)
		}
		if !slices.Contains(c.kinds, k) {
			c.kinds = append(c.kinds, k)
		}
	}
	var err error
	deriveFor := func(id []byte, onion string, layer Layer, size int) []byte {
		if err != nil {
			return nil
		}
		var k []byte
		k, err = d.Derive(id, onion, string(layer), size)
		return k
	}
	derive := func(onion string, layer Layer, size int) []byte {
		return deriveFor(columnID, onion, layer, size)
	}
	// The DET and OPE layers: per column, or per join group.
	sharedID, eqLabel, ordLabel := columnID, string(KindEq), string(KindOrd)
	if c.joined {
		sharedID, eqLabel, ordLabel = joinID, labelJoinEq, labelJoinOrd
	}
	c.eqRNDKey = derive(string(KindEq), LayerRND, 32)
	c.compact = f >= FormatCompact && t.compactEq(c.joined)
	if c.compact {
		// One AES block inside: no padding block.
		detKey := deriveFor(sharedID, eqLabel, layerDETBlock, det.BlockKeySize)
		if err != nil {
			return nil, err
		}
		if c.eqRND, err = rnd.NewUnpadded(c.eqRNDKey); err != nil {
			return nil, err
		}
		if c.eqBlock, err = det.NewBlock(detKey); err != nil {
			return nil, err
		}
		c.eqDET = c.eqBlock
	} else {
		detKey := deriveFor(sharedID, eqLabel, LayerDET, det.KeySize)
		if err != nil {
			return nil, err
		}
		if c.eqRND, err = rnd.New(c.eqRNDKey); err != nil {
			return nil, err
		}
		if c.eqDET, err = det.New(detKey, sharedID); err != nil {
			return nil, err
		}
	}
	if !t.equalityLossless() {
		valKey := derive(labelVal, LayerRND, 32)
		if err != nil {
			return nil, err
		}
		if c.val, err = rnd.NewAEAD(valKey, columnID); err != nil {
			return nil, err
		}
	}
	if c.has(KindOrd) {
		c.ordRNDKey = derive(string(KindOrd), LayerRND, 32)
		opeKey := deriveFor(sharedID, ordLabel, LayerOPE, ope.KeySize)
		if err != nil {
			return nil, err
		}
		c.uuidOrd = f >= FormatUUID
		if c.uuidOrd {
			c.ordRND, err = rnd.NewUnpadded(c.ordRNDKey)
		} else {
			c.ordRND, err = rnd.New(c.ordRNDKey)
		}
		if err != nil {
			return nil, err
		}
		if c.ord32() {
			c.ope32, err = ope.New32(opeKey)
		} else {
			c.ope64, err = ope.New64(opeKey)
		}
		if err != nil {
			return nil, err
		}
	}
	if c.has(KindAdd) {
		if homKey == nil {
			return nil, errors.New("onion: the Add onion needs the Paillier key")
		}
		if homKey.Bits() < hom.MinBits {
			return nil, errors.New("onion: Paillier key too small")
		}
		c.homSK, c.homEnc = homKey, homEnc
	}
	if c.has(KindSearch) {
		searchKey := derive(string(KindSearch), LayerSearch, search.KeySize)
		if err != nil {
			return nil, err
		}
		if c.tok, err = search.New(searchKey); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Type returns the column's type.
func (c *Column) Type() Type { return c.t }

// Kinds returns the column's onion kinds (Eq first).
func (c *Column) Kinds() []Kind { return slices.Clone(c.kinds) }

func (c *Column) has(k Kind) bool { return slices.Contains(c.kinds, k) }

// HasVal reports whether the column keeps a value copy (Cells.Val): for
// types whose EqualityKey loses information.
func (c *Column) HasVal() bool { return c.val != nil }

// ord32 reports whether the Ord onion uses the 32-bit OPE domain.
func (c *Column) ord32() bool { return ordDomain32(c.t, c.joined) }

// ordDomain32 reports whether the Ord onion of a column of type t (joined:
// in a join group) uses the 32-bit OPE domain. Integers of a join group all
// use the 64-bit domain, so that their ciphertexts compare across widths.
func ordDomain32(t Type, joined bool) bool {
	switch t.Base {
	case SmallInt, Integer:
		return !joined
	case Date, Boolean:
		return true
	}
	return false
}

// PhysicalColumns returns the physical columns of the column, named
// prefix + suffix, in a fixed order: _eq, _ord, _add, _srch, _val. The
// per-row salt column (bytea, SaltSize bytes) is shared by the row and not
// listed.
func (c *Column) PhysicalColumns(prefix string) []PhysicalColumn {
	return Layout(c.t, c.kinds, c.joined, c.format, prefix)
}

// CellSQLType returns the PostgreSQL type of the column's cells of onion k
// (KindEq or KindOrd): "uuid" or "bytea" (see the package's CellSQLType).
func (c *Column) CellSQLType(k Kind) string { return CellSQLType(c.t, k, c.joined, c.format) }

// Layout returns the physical columns of a column of type t (joined: in a
// join group) and cell format f with the onions of kinds (Eq is always
// included), named prefix + suffix, in the order of PhysicalColumns. It
// needs no keys, so DDL can be planned with it.
func Layout(t Type, kinds []Kind, joined bool, f Format, prefix string) []PhysicalColumn {
	var out []PhysicalColumn
	add := func(suffix, typ string, k Kind) {
		out = append(out, PhysicalColumn{Name: prefix + suffix, Suffix: suffix, SQLType: typ, Kind: k})
	}
	add("_eq", CellSQLType(t, KindEq, joined, f), KindEq)
	if slices.Contains(kinds, KindOrd) {
		add("_ord", CellSQLType(t, KindOrd, joined, f), KindOrd)
	}
	if slices.Contains(kinds, KindAdd) {
		add("_add", "bytea", KindAdd)
	}
	if slices.Contains(kinds, KindSearch) {
		add("_srch", "bigint[]", KindSearch)
	}
	if !t.equalityLossless() {
		add("_val", "bytea", "")
	}
	return out
}

func checkSalt(salt []byte) error {
	if len(salt) != SaltSize {
		return fmt.Errorf("onion: salt must be %d bytes, got %d", SaltSize, len(salt))
	}
	return nil
}

// Encrypt returns the physical values of v in every onion of the column,
// each at its strongest layer, with the row's salt (SaltSize bytes, fresh
// and random per row: see rnd.NewSalt). NULL gives all-nil Cells. v must be
// a valid Value of the column's type.
func (c *Column) Encrypt(v Value, salt []byte) (Cells, error) {
	return c.EncryptAt(v, salt, LayerRND, LayerRND)
}

// EncryptAt is Encrypt for a column whose onions were peeled: the Eq cell
// at eqLayer (LayerRND or LayerDET), the Ord cell at ordLayer (LayerRND or
// LayerOPE; ignored when the column has no Ord onion). A cell at the inner
// layer is exactly what peeling the RND layer off Encrypt's cell leaves
// (PeelRND), without the cost of making and then removing that layer.
//
// Warning: a cell at DET or OPE shows the server equality or order;
// write one only where the column's catalog entry says the onion is
// peeled, so it shows nothing new.
func (c *Column) EncryptAt(v Value, salt []byte, eqLayer, ordLayer Layer) (Cells, error) {
	if eqLayer != LayerRND && eqLayer != LayerDET {
		return Cells{}, fmt.Errorf("onion: the Eq onion has no layer %q", eqLayer)
	}
	if ordLayer != LayerRND && ordLayer != LayerOPE {
		return Cells{}, fmt.Errorf("onion: the Ord onion has no layer %q", ordLayer)
	}
	if v.IsNull() {
		return Cells{}, nil
	}
	if !c.t.Valid(v) {
		return Cells{}, fmt.Errorf("onion: value is not a valid %s", c.t)
	}
	if err := c.checkEnum(v); err != nil {
		return Cells{}, err
	}
	if err := checkSalt(salt); err != nil {
		return Cells{}, err
	}
	var cells Cells
	detCT, err := c.eqDET.EncryptDeterministically(c.eqKeyOf(v))
	if err != nil {
		return Cells{}, err
	}
	cells.Eq = detCT
	if eqLayer == LayerRND {
		cells.Eq = c.eqRND.EncryptProbabilistically(make([]byte, 0, c.eqRND.CiphertextLen(len(detCT))), detCT, salt)
	}
	if c.val != nil {
		cells.Val = c.val.EncryptProbabilistically(nil, c.t.AppendBinary(nil, v), salt)
	}
	if c.has(KindOrd) {
		opeCT := c.encryptOPE(c.ordinal(v))
		if ordLayer == LayerRND {
			cells.Ord = c.ordRND.EncryptProbabilistically(make([]byte, 0, c.ordRND.CiphertextLen(len(opeCT))), opeCT, salt)
		} else {
			cells.Ord = append([]byte(nil), opeCT...) // the cache's copy is shared
		}
	}
	if c.has(KindAdd) {
		ct, err := c.encryptHOM(c.addInt(v))
		if err != nil {
			return Cells{}, err
		}
		cells.Add = c.homSK.AppendCiphertext(nil, ct)
	}
	if c.has(KindSearch) {
		toks := c.tokCache.get(v.s, c.tok.Tokens)
		cells.Search = toks[:len(toks):len(toks)]
	}
	return cells, nil
}

// Decrypt returns the value of cells stored at the strongest layers (as
// Encrypt made them) with the row's salt. It reads Val for lossy types and
// Eq otherwise (and checks that both agree when both are given). All-nil
// cells are NULL. A ciphertext that does not decrypt (modified, truncated,
// from another column or row, wrong key) gives ErrDecrypt.
func (c *Column) Decrypt(cells Cells, salt []byte) (Value, error) {
	return c.DecryptAt(cells, salt, LayerRND)
}

// DecryptAt is Decrypt for an Eq cell at layer eqLayer: LayerRND (as
// stored initially) or LayerDET (once the Eq onion was peeled).
func (c *Column) DecryptAt(cells Cells, salt []byte, eqLayer Layer) (Value, error) {
	if eqLayer != LayerRND && eqLayer != LayerDET {
		return Value{}, fmt.Errorf("onion: the Eq onion has no layer %q", eqLayer)
	}
	if c.val == nil {
		if cells.Eq == nil {
			return Value{}, nil
		}
	} else {
		if cells.Val == nil {
			if cells.Eq == nil {
				return Value{}, nil
			}
			return Value{}, errors.New("onion: the value copy (Val) of this column is needed to decrypt it")
		}
		if len(salt) != SaltSize {
			return Value{}, ErrDecrypt
		}
		b, err := c.val.Decrypt(nil, cells.Val, salt)
		if err != nil {
			return Value{}, ErrDecrypt
		}
		v, err := c.t.ParseBinary(b)
		if err != nil || !c.t.Valid(v) {
			return Value{}, ErrDecrypt
		}
		if cells.Eq != nil {
			k, err := c.eqKey(cells.Eq, salt, eqLayer)
			if err != nil || subtle.ConstantTimeCompare(k, c.eqKeyOf(v)) != 1 {
				return Value{}, ErrDecrypt
			}
		}
		return v, nil
	}
	detCT := cells.Eq
	if eqLayer == LayerRND || c.compact {
		buf := rndScratch.Get().(*[rndScratchSize]byte)
		defer rndScratch.Put(buf)
		if eqLayer == LayerRND {
			if len(salt) != SaltSize {
				return Value{}, ErrDecrypt
			}
			var err error
			if detCT, err = c.eqRND.Decrypt(buf[:0], cells.Eq, salt); err != nil {
				return Value{}, ErrDecrypt
			}
		}
		if c.compact {
			// One AES block: decrypting costs less than a lookup in the
			// shared cache, whose lock sessions contend for.
			k, err := c.eqBlock.AppendDecryptDeterministically(buf[rndScratchSize-det.BlockCiphertextLen:rndScratchSize-det.BlockCiphertextLen], detCT)
			if err != nil {
				return Value{}, ErrDecrypt
			}
			v, err := c.fromCompactKey(k)
			clear(k)
			if err != nil {
				return Value{}, ErrDecrypt
			}
			return v, nil
		}
	}
	// The DET layer is deterministic: a value seen recently is not
	// decrypted again (split execution decrypts every row of a result,
	// and columns repeat values).
	if v, ok := c.eqMemo.lookup(detCT); ok {
		return v, nil
	}
	k, err := c.eqDET.DecryptDeterministically(detCT)
	if err != nil {
		return Value{}, ErrDecrypt
	}
	var v Value
	if c.compact {
		v, err = c.fromCompactKey(k)
	} else {
		v, err = c.t.fromEqualityKey(k)
	}
	if err != nil {
		return Value{}, ErrDecrypt
	}
	c.eqMemo.store(detCT, v)
	return v, nil
}

// rndScratch holds buffers for the RND layer's plaintext, which DecryptAt
// needs only until it returns (a stack array would escape to the heap
// through the cipher.Block interface on every cell).
var rndScratch = sync.Pool{New: func() any { return new([rndScratchSize]byte) }}

// rndScratchSize fits Eq cells of up to 512 bytes and the IV block:
// sysbench's character(120) makes cells of 144 bytes, TPC-H's longest
// comment 224. A larger cell allocates its plaintext.
const rndScratchSize = 512 + 16

// eqKey returns the EqualityKey inside an Eq cell.
func (c *Column) eqKey(cell, salt []byte, layer Layer) ([]byte, error) {
	detCT := cell
	if layer == LayerRND {
		if len(salt) != SaltSize {
			return nil, ErrDecrypt
		}
		var err error
		if detCT, err = c.eqRND.Decrypt(nil, cell, salt); err != nil {
			return nil, ErrDecrypt
		}
	}
	k, err := c.eqDET.DecryptDeterministically(detCT)
	if err != nil {
		return nil, ErrDecrypt
	}
	return k, nil
}

// EqDET returns the DET-layer ciphertext of v, what the Eq onion holds once
// peeled to DET: for comparing with = (and IN, joins) on the server. v is a
// value of the column's ComparisonType (or of its type): all values that
// are equal in PostgreSQL to a stored value give its ciphertext.
func (c *Column) EqDET(v Value) ([]byte, error) {
	if v.IsNull() {
		return nil, nil
	}
	ct := c.t.ComparisonType()
	if err := c.checkEnum(v); err != nil {
		return nil, err
	}
	switch c.t.Base {
	case SmallInt, Integer, BigInt:
		// Integers of every width share one EqualityKey.
		if v.kind != kindInt {
			return nil, errors.New("onion: not an integer value")
		}
	default:
		if !ct.Valid(v) && !c.t.Valid(v) {
			return nil, fmt.Errorf("onion: value is not a valid %s", ct)
		}
	}
	if c.compact {
		return c.eqDET.EncryptDeterministically(c.compactComparisonKey(v))
	}
	return c.eqDET.EncryptDeterministically(ct.EqualityKey(v))
}

// eqKeyOf is the plaintext of the Eq onion's DET layer for a valid value
// of the column.
func (c *Column) eqKeyOf(v Value) []byte {
	if c.compact {
		return c.compactKey(v)
	}
	return c.t.EqualityKey(v)
}

// Rounding says how OrdOPE maps a value that falls between two values of
// the column's domain (a numeric with more fraction digits than the
// column's scale).
type Rounding int

// Roundings.
const (
	Exact Rounding = iota // refuse values not in the domain
	Floor                 // the greatest domain value <= v
	Ceil                  // the least domain value >= v
)

// OrdOPE returns the OPE-layer ciphertext of v (what the Ord onion holds
// once peeled to OPE), for range comparisons and ORDER BY on the server.
// v is a value of the column's ComparisonType; an integer of any width is
// accepted for integer columns. For numeric(p,s), v·10^s is rounded as r
// says (so c < 1.555 on numeric(10,2) becomes c <= Floor(1.555) = 1.55).
// A value outside the domain gives ErrOrdRange.
//
// For text columns (OrdIsPrefix) it is the ciphertext of the 8-byte prefix
// of v (of v without trailing spaces for character columns), and r is
// ignored: the comparison on the server is only a superset filter. See
// OrdIsPrefix for how to use it.
func (c *Column) OrdOPE(v Value, r Rounding) ([]byte, error) {
	if !c.has(KindOrd) {
		return nil, errors.New("onion: the column has no Ord onion")
	}
	if v.IsNull() {
		return nil, nil
	}
	var x int64
	switch c.t.Base {
	case Enum:
		if err := c.checkEnum(v); err != nil {
			return nil, err
		}
		x = c.enumOrdinal(v)
	case TimeTZ:
		if !c.t.Valid(v) {
			return nil, errors.New("onion: not a time with time zone")
		}
		x = timetzOrdinal(v)
	case Text, Varchar, Char:
		if v.kind != kindBytes {
			return nil, errors.New("onion: not a text value")
		}
		x = textOrdinal(c.t, v.s)
	case Numeric:
		if v.kind != kindNumeric {
			return nil, errors.New("onion: not a numeric value")
		}
		switch v.flag {
		case numNaN:
			x = math.MaxInt64
		case numPInf, numNInf:
			return nil, ErrOrdRange
		default:
			bx, exact := scaledIntRounded(v, c.t.Scale, r)
			if !exact && r == Exact {
				return nil, fmt.Errorf("onion: %s is not a value of %s", appendNumericText(nil, v), c.t)
			}
			lim := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(c.t.Precision)), nil)
			if bx.CmpAbs(lim) >= 0 {
				return nil, ErrOrdRange
			}
			x = bx.Int64()
		}
	default:
		if v.kind != kindInt {
			return nil, errors.New("onion: value of the wrong kind")
		}
		x = c.ordinal(v)
		if c.ord32() && (x < math.MinInt32 || x > math.MaxInt32) {
			return nil, ErrOrdRange
		}
	}
	return c.encryptOPE(x), nil
}

// scaledIntRounded returns v·10^scale rounded as r says, and whether it was
// exact.
func scaledIntRounded(v Value, scale int, r Rounding) (*big.Int, bool) {
	x := scaledInt(v, scale)
	back := fromScaledInt(x, scale)
	exact := compareNumeric(back, v) == 0
	if !exact {
		// scaledInt truncates toward zero.
		if r == Floor && v.flag == numNeg {
			x.Sub(x, big.NewInt(1))
		} else if r == Ceil && v.flag != numNeg {
			x.Add(x, big.NewInt(1))
		}
	}
	return x, exact
}

// ordinal returns the order-preserving integer form of a valid value: the
// integer, days, microseconds, 0/1, for numeric(p,s) v·10^s (NaN, which
// sorts above every number, as math.MaxInt64), for texts the 8-byte prefix
// (textOrdinal).
func (c *Column) ordinal(v Value) int64 {
	switch c.t.Base {
	case Numeric:
		if v.flag == numNaN {
			return math.MaxInt64
		}
		return scaledInt(v, c.t.Scale).Int64()
	case Text, Varchar, Char:
		return textOrdinal(c.t, v.s)
	case Float8, Float4:
		return float8Ordinal(v.i)
	case Enum:
		return c.enumOrdinal(v)
	case TimeTZ:
		return timetzOrdinal(v)
	}
	return v.i
}

func (c *Column) encryptOPE(x int64) []byte {
	ct := c.opeCache.get(x, c.computeOPE)
	return ct[:len(ct):len(ct)] // shared: an append must not write into it
}

func (c *Column) computeOPE(x int64) []byte {
	if c.ope32 != nil {
		ct := ope.AppendCiphertext32(make([]byte, 0, 16), c.ope32.EncryptOrderPreserving(int32(x)))
		if c.uuidOrd {
			ct = append(ct, ordPad[:]...)
		}
		return ct
	}
	return c.ope64.EncryptOrderPreserving(x).AppendBytes(make([]byte, 0, 16))
}

// DecryptOrd returns the value of an Ord cell at layer ordLayer (LayerRND
// with the row's salt, or LayerOPE, e.g. a MIN or MAX computed by the
// server, salt ignored).
//
// The Ord onion of a text column holds only a prefix of the value: for
// such a column DecryptOrd returns ErrOrdPrefix once the cell is checked
// (ErrDecrypt if it does not decrypt). Decrypt the Eq onion for the value,
// or use DecryptOrdPrefix for the prefix.
func (c *Column) DecryptOrd(cell, salt []byte, ordLayer Layer) (Value, error) {
	if cell == nil && c.has(KindOrd) {
		return Value{}, nil
	}
	x, err := c.decryptOrdinal(cell, salt, ordLayer)
	if err != nil {
		return Value{}, err
	}
	switch c.t.Base {
	case Text, Varchar, Char:
		return Value{}, ErrOrdPrefix
	}
	return c.fromOrdinal(x)
}

// fromOrdinal is the inverse of ordinal for the types whose ordinal is
// the whole value (not texts): ErrDecrypt if x is no valid value.
func (c *Column) fromOrdinal(x int64) (Value, error) {
	var v Value
	switch c.t.Base {
	case Numeric:
		if x == math.MaxInt64 {
			v = Value{kind: kindNumeric, flag: numNaN}
		} else {
			v = fromScaledInt64(x, c.t.Scale)
		}
	case Boolean:
		v = Value{kind: kindInt, i: x}
	case Float8, Float4:
		v = IntValue(float8FromOrdinal(x))
	case Enum:
		var ok bool
		if v, ok = c.enumFromOrdinal(x); !ok {
			return Value{}, ErrDecrypt
		}
	case TimeTZ:
		v = timetzFromOrdinal(x)
	default:
		v = IntValue(x)
	}
	if !c.t.Valid(v) {
		return Value{}, ErrDecrypt
	}
	return v, nil
}

// decryptOrdinal returns the order-preserving integer form inside a
// non-NULL Ord cell at layer ordLayer. For texts it checks that the
// integer is a valid prefix (see textPrefixValid).
func (c *Column) decryptOrdinal(cell, salt []byte, ordLayer Layer) (int64, error) {
	if !c.has(KindOrd) {
		return 0, errors.New("onion: the column has no Ord onion")
	}
	switch ordLayer {
	case LayerRND:
		if len(salt) != SaltSize {
			return 0, ErrDecrypt
		}
		var err error
		if cell, err = c.ordRND.Decrypt(nil, cell, salt); err != nil {
			return 0, ErrDecrypt
		}
	case LayerOPE:
	default:
		return 0, fmt.Errorf("onion: the Ord onion has no layer %q", ordLayer)
	}
	var x int64
	if c.ope32 != nil {
		if c.uuidOrd {
			if len(cell) != 16 || [8]byte(cell[8:]) != ordPad {
				return 0, ErrDecrypt
			}
			cell = cell[:8]
		}
		u, err := ope.ParseCiphertext32(cell)
		if err != nil {
			return 0, ErrDecrypt
		}
		x32, err := c.ope32.DecryptOrderPreserving(u)
		if err != nil {
			return 0, ErrDecrypt
		}
		x = int64(x32)
	} else {
		u, err := ope.Uint128FromBytes(cell)
		if err != nil {
			return 0, ErrDecrypt
		}
		if x, err = c.ope64.DecryptOrderPreserving(u); err != nil {
			return 0, ErrDecrypt
		}
	}
	if c.t.isText() && !textPrefixValid(x) {
		return 0, ErrDecrypt
	}
	return x, nil
}

// addNaN is the Paillier plaintext of a numeric NaN: 2^1100, above any sum
// of up to 2^64 values of a numeric(p,s) with p <= 300 (below 2^1061 in
// magnitude). A sum at or above addNaNThreshold contains a NaN.
var (
	addNaN          = new(big.Int).Lsh(big.NewInt(1), 1100)
	addNaNThreshold = new(big.Int).Lsh(big.NewInt(1), 1099)
)

// addInt returns the integer the Add onion encrypts: the integer, or
// v·10^s for numeric(p,s) (addNaN for NaN).
func (c *Column) addInt(v Value) *big.Int {
	if c.t.Base == Numeric {
		if v.flag == numNaN {
			return addNaN
		}
		return scaledInt(v, c.t.Scale)
	}
	return big.NewInt(v.i)
}

func (c *Column) encryptHOM(m *big.Int) (*hom.Ciphertext, error) {
	if c.homEnc != nil {
		return c.homEnc.Encrypt(m)
	}
	return c.homSK.Encrypt(nil, m)
}

// PaillierKey returns the Paillier key of the column's Add onion (nil for
// a column without one): sums of its cells decrypt under it.
func (c *Column) PaillierKey() *hom.PrivateKey { return c.homSK }

// AddCiphertextSize is the size of an Add cell.
func (c *Column) AddCiphertextSize() int {
	if c.homSK == nil {
		return 0
	}
	return c.homSK.CiphertextSize()
}

// SumType returns the type of SUM over the column, as PostgreSQL types it:
// bigint for smallint and integer, numeric for bigint and numeric.
func (c *Column) SumType() Type {
	switch c.t.Base {
	case SmallInt, Integer:
		return Type{Base: BigInt}
	}
	return Type{Base: Numeric}
}

// DecryptSum decrypts the Paillier sum of Add cells (the product modulo n²
// computed by the server's aggregate or by a hom.Accumulator, in the
// fixed-width encoding) and returns it as a Value of SumType: the sum of
// numeric(p,s) values has display scale max(s, 0), and is NaN if any
// summand was NaN. A nil sum (no rows) is NULL.
func (c *Column) DecryptSum(sum []byte) (Value, error) {
	if !c.has(KindAdd) {
		return Value{}, errors.New("onion: the column has no Add onion")
	}
	if sum == nil {
		return Value{}, nil
	}
	m, err := c.homSK.DecryptBytes(sum)
	if err != nil {
		return Value{}, ErrDecrypt
	}
	switch c.t.Base {
	case SmallInt, Integer:
		if !m.IsInt64() {
			return Value{}, pgErr(codeNumericOutOfRange, "bigint out of range")
		}
		return IntValue(m.Int64()), nil
	case BigInt:
		return fromScaledInt(m, 0), nil
	}
	if m.Cmp(addNaNThreshold) >= 0 {
		return Value{kind: kindNumeric, flag: numNaN}, nil
	}
	return fromScaledInt(m, c.t.Scale), nil
}

// DecryptAdd decrypts one Add cell (a single value) to a Value of the
// column's type.
// EncryptAddDelta returns the Add onion ciphertext of v, or of -v when
// negate is set: the increment of UPDATE ... SET c = c + v (c - v), which
// the server multiplies into each row's Add cell modulo n² (HomModulus).
// v must be a value of the column's type (for numeric(p,s), of its scale).
//
// The ciphertext is probabilistic (Paillier) and reveals nothing of v;
// the server learns which rows received an increment.
func (c *Column) EncryptAddDelta(v Value, negate bool) ([]byte, error) {
	if !c.has(KindAdd) {
		return nil, errors.New("onion: the column has no Add onion")
	}
	if v.IsNull() {
		return nil, nil
	}
	m := c.addInt(v)
	if negate {
		m = new(big.Int).Neg(m)
	}
	ct, err := c.encryptHOM(m)
	if err != nil {
		return nil, err
	}
	return c.homSK.AppendCiphertext(nil, ct), nil
}

// HomModulus returns the Paillier modulus n² in decimal (public), for the
// server's product of Add ciphertexts.
func (c *Column) HomModulus() string {
	if c.homSK == nil {
		return ""
	}
	return c.homSK.NSquaredNumeric()
}

func (c *Column) DecryptAdd(cell []byte) (Value, error) {
	v, err := c.DecryptSum(cell)
	if err != nil || v.IsNull() {
		return v, err
	}
	switch c.t.Base {
	case SmallInt, Integer:
	case BigInt:
		x := scaledInt(v, 0)
		if !x.IsInt64() {
			return Value{}, c.sumOutOfRange()
		}
		v = IntValue(x.Int64())
	}
	if !c.t.Valid(v) {
		return Value{}, c.sumOutOfRange()
	}
	return v, nil
}

// sumOutOfRange is PostgreSQL's error for a value that left the column's
// type: increments on the server (c = c + k over the Add onion) cannot
// check the range, so the error surfaces when the value is read.
func (c *Column) sumOutOfRange() error {
	e := pgErr(codeNumericOutOfRange, "%s out of range", c.t.String())
	switch c.t.Base {
	case Numeric:
		e.Message = "numeric field overflow"
	case Integer:
		e.Message = "integer out of range"
	}
	e.Detail = "An increment (UPDATE ... SET c = c + k) took the stored value out of the column's range; the server could not check it on the encrypted value."
	return e
}

// SearchTokens returns the tokens every text matching the LIKE (or ILIKE)
// pattern p contains, for the server-side prefilter c_srch @> tokens; nil
// when no prefilter is possible. The proxy must then check p itself on the
// decrypted candidates. Note that LIKE on character(n) sees the blank
// padding, and so do the tokens.
func (c *Column) SearchTokens(p *pglike.Pattern) ([]int64, error) {
	if !c.has(KindSearch) {
		return nil, errors.New("onion: the column has no Search onion")
	}
	var segs []search.Segment
	for _, s := range p.Segments() {
		segs = append(segs, search.Segment{Literal: s.Literal, AnchoredStart: s.AnchoredStart, AnchoredEnd: s.AnchoredEnd})
	}
	return c.tok.TokensForSegments(segs), nil
}

// PeelKey returns the RND key of the Eq or Ord onion, to peel the layer on
// the server with pgcrypto (PeelExpr). Giving it to the server reveals
// the inner layer of that onion for every row.
func (c *Column) PeelKey(k Kind) ([]byte, error) {
	switch {
	case k == KindEq:
		return slices.Clone(c.eqRNDKey), nil
	case k == KindOrd && c.has(KindOrd):
		return slices.Clone(c.ordRNDKey), nil
	}
	return nil, fmt.Errorf("onion: the column has no RND layer on onion %q", k)
}

// PeelExpr returns the SQL expression that peels the RND layer of the Eq
// or Ord onion on the server with pgcrypto (rnd.Cipher.PeelExpr: the
// padding follows the column's format), for the cell expression ct, the
// salt expression salt and the key expression key (bound to PeelKey(k)).
// The arguments are inserted verbatim and must be trusted SQL.
//
// For a cell of type uuid (CellSQLType) the expression reads the cell's
// 16 bytes with uuid_send and gives a uuid again.
func (c *Column) PeelExpr(k Kind, ct, salt, key string) (string, error) {
	var r *rnd.Cipher
	switch {
	case k == KindEq:
		r = c.eqRND
	case k == KindOrd && c.has(KindOrd):
		r = c.ordRND
	default:
		return "", fmt.Errorf("onion: the column has no RND layer on onion %q", k)
	}
	if c.CellSQLType(k) != "uuid" {
		return r.PeelExpr(ct, salt, key), nil
	}
	return "encode(" + r.PeelExpr("uuid_send("+ct+")", salt, key) + ", 'hex')::uuid", nil
}

// CheckPeeled checks an Eq cell peeled to DET or an Ord cell peeled to
// OPE (after a peel on the server) and returns ErrDecrypt if it does not
// decrypt: a peel with the wrong key or of a corrupt cell. Ord cells are
// not authenticated, but a random 16 bytes is a valid OPE cell with
// probability about 2^-32 (2^-96 with FormatUUID's padding of a 32-bit
// domain's ciphertext).
func (c *Column) CheckPeeled(k Kind, cell []byte) error {
	if cell == nil {
		return nil
	}
	switch k {
	case KindEq:
		if _, err := c.eqDET.DecryptDeterministically(cell); err != nil {
			return ErrDecrypt
		}
	case KindOrd:
		if _, err := c.decryptOrdinal(cell, nil, LayerOPE); err != nil {
			return ErrDecrypt
		}
	}
	return nil
}

// PeelRND removes the RND layer of an Eq or Ord cell in the proxy (for
// read-decrypt-write peeling without pgcrypto): the DET or OPE ciphertext.
// The inner layer is checked, so a bad cell gives ErrDecrypt.
func (c *Column) PeelRND(k Kind, cell, salt []byte) ([]byte, error) {
	if cell == nil {
		return nil, nil
	}
	if len(salt) != SaltSize {
		return nil, ErrDecrypt
	}
	switch {
	case k == KindEq:
		inner, err := c.eqRND.Decrypt(nil, cell, salt)
		if err != nil {
			return nil, ErrDecrypt
		}
		if _, err := c.eqDET.DecryptDeterministically(inner); err != nil {
			return nil, ErrDecrypt
		}
		return inner, nil
	case k == KindOrd && c.has(KindOrd):
		inner, err := c.ordRND.Decrypt(nil, cell, salt)
		if err != nil {
			return nil, ErrDecrypt
		}
		// A text's prefix is checked, and then refused with ErrOrdPrefix.
		if _, err := c.DecryptOrd(inner, nil, LayerOPE); err != nil && !errors.Is(err, ErrOrdPrefix) {
			return nil, ErrDecrypt
		}
		return inner, nil
	}
	return nil, fmt.Errorf("onion: the column has no RND layer on onion %q", k)
}

// ComparisonType returns the type PostgreSQL gives a literal compared with
// the column (the base type without modifiers): varchar for varchar(n),
// bpchar for character(n), numeric for numeric(p,s). Parse comparison
// constants with it, not with the column's type: WHERE c = 'abcdefgh' on a
// varchar(5) column is false, not an error, and WHERE n = 1.555 on a
// numeric(10,2) column matches nothing.
func (t Type) ComparisonType() Type {
	switch t.Base {
	case Varchar, Char, Numeric:
		return Type{Base: t.Base}
	case Float4:
		// A real compares with a numeric or double precision constant
		// as double precision (float48eq): 0.1 equals no real.
		return Type{Base: Float8}
	case Cidr:
		// cidr has no operators of its own: it compares as inet.
		return Type{Base: Inet}
	case Array:
		// Elements compare whatever their modifiers.
		return Type{Base: Array, Elem: t.Elem}
	}
	return t
}
