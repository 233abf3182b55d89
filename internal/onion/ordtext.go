package onion

import (
	"encoding/binary"
	"errors"
	"strings"
)

// OrdPrefixLen is the number of leading bytes of a text whose order the
// Ord onion of a text column preserves.
const OrdPrefixLen = 8

// The Ord onion of a text column ("OPE on a prefix").
//
// Its plaintext is an order-preserving integer built from the first
// OrdPrefixLen bytes of the value's UTF-8 bytes (for character types, of
// the value without its trailing spaces, as PostgreSQL compares them),
// zero-padded to 8 bytes, read as a big-endian uint64 and mapped to int64
// by flipping the top bit; it is encrypted with the 64-bit OPE (16-byte
// cells). Under the C collation texts compare by bytes (memcmp, then the
// shorter first), and texts contain no NUL, so for all texts a and b:
//
//	a < b  implies  prefix(a) <= prefix(b)
//	prefix(a) < prefix(b)  implies  a < b
//
// Values with equal prefixes (all texts longer than 8 bytes that share
// their first 8 bytes, or 'ab' and 'ab ' of a character column) get equal
// OPE ciphertexts: the server's comparisons are a superset filter, and
// the proxy breaks ties on decrypted values (Type.Compare).

// textOrdinal returns the order-preserving integer of the prefix of the
// text s of type t (t's trailing spaces are stripped for character types).
func textOrdinal(t Type, s string) int64 {
	if t.Base == Char {
		s = strings.TrimRight(s, " ")
	}
	return prefixOrdinal(s)
}

// prefixOrdinal returns the order-preserving integer of the first
// OrdPrefixLen bytes of s, zero-padded.
func prefixOrdinal(s string) int64 {
	var b [OrdPrefixLen]byte
	copy(b[:], s)
	return int64(binary.BigEndian.Uint64(b[:]) ^ 1<<63)
}

// ordinalPrefix inverts prefixOrdinal: the prefix bytes without the
// zero padding.
func ordinalPrefix(x int64) []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, OrdPrefixLen), uint64(x)^1<<63)
	for len(b) > 0 && b[len(b)-1] == 0 {
		b = b[:len(b)-1]
	}
	return b
}

// textPrefixValid reports whether x can be the ordinal of a text prefix:
// texts contain no NUL, so the zero padding is a suffix of zero bytes.
func textPrefixValid(x int64) bool {
	for _, c := range ordinalPrefix(x) {
		if c == 0 {
			return false
		}
	}
	return true
}

// OrdIsPrefix reports whether the column's Ord onion orders values only
// approximately: true for text types (text, varchar(n), character(n)),
// whose Ord onion holds the OPE of an 8-byte prefix. See
// Type.OrdIsPrefix.
func (c *Column) OrdIsPrefix() bool { return c.t.OrdIsPrefix() }

// OrdIsPrefix reports whether the Ord onion of a column of type t holds
// the order-preserving encryption of a fixed-length prefix of the value
// rather than of the value: true for text, varchar(n) and character(n).
//
// For such a column comparisons on the server are a superset filter, with
// an exact check in the proxy on the decrypted (Eq onion) values of the
// candidate rows. With p = OrdOPE(k):
//
//	c <  k, c <= k    c_ord <= p   (then check c < k or c <= k)
//	c >  k, c >= k    c_ord >= p   (then check)
//	c BETWEEN k1 AND k2  c_ord >= p1 AND c_ord <= p2 (then check)
//	c =  k            use the Eq onion (or c_ord = p, then check)
//
// A row with c_ord < p satisfies c < k and c <= k for sure (and c_ord > p
// satisfies c > k, c >= k): only rows with c_ord = p need the check, so
// the proxy may skip it for the others. ORDER BY c_ord sorts rows by
// prefix: the proxy sorts each run of equal c_ord by the decrypted values
// (Type.Compare), and LIMIT must not cut inside a run before that. MIN(c)
// and MAX(c) are among the rows with the smallest or greatest c_ord. A
// range join a.c < b.c becomes a.c_ord <= b.c_ord with a check in the
// proxy.
func (t Type) OrdIsPrefix() bool { return t.isText() }

// OrdOPEText returns the OPE-layer ciphertext of the prefix of the text s
// taken as it is, without stripping trailing spaces: for a character(n)
// column compared with a value of type text (not an untyped literal),
// which PostgreSQL compares as text (the column's padding is stripped,
// the constant's is kept). For text and varchar columns it is OrdOPE of
// the text. The result is a superset filter as OrdIsPrefix describes.
func (c *Column) OrdOPEText(s string) ([]byte, error) {
	if !c.has(KindOrd) {
		return nil, errors.New("onion: the column has no Ord onion")
	}
	if !c.t.isText() {
		return nil, errors.New("onion: OrdOPEText needs a text column")
	}
	return c.encryptOPE(prefixOrdinal(s)), nil
}

// DecryptOrdPrefix returns the prefix inside an Ord cell of a text column
// at layer ordLayer (LayerRND with the row's salt, or LayerOPE, salt
// ignored): the first OrdPrefixLen bytes of the value (of the value
// without trailing spaces for character types), fewer if it is shorter. A
// prefix may end inside a multibyte character. A NULL cell gives nil.
func (c *Column) DecryptOrdPrefix(cell, salt []byte, ordLayer Layer) ([]byte, error) {
	if !c.t.isText() {
		return nil, errors.New("onion: DecryptOrdPrefix needs a text column")
	}
	if cell == nil && c.has(KindOrd) {
		return nil, nil
	}
	x, err := c.decryptOrdinal(cell, salt, ordLayer)
	if err != nil {
		return nil, err
	}
	return ordinalPrefix(x), nil
}
