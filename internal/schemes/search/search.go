// Package search implements the SEARCH onion: keyed tokens of a text that
// let the server prefilter LIKE, ILIKE and keyword predicates with a GIN
// index, without seeing the text.
//
// # Tokens
//
// The tokens of a text are the keyed hashes of
//
//   - its distinct words: maximal runs of letters, marks and digits
//     (Unicode categories L, M and N); every other rune separates words;
//   - its distinct character trigrams: every window of three consecutive
//     runes of the text framed by a start and an end marker, so "abc" has
//     the trigrams ^ab, abc and bc$ (a one-rune text has only ^a$, and the
//     empty text the single token of the empty string).
//
// Both are computed on the case-folded text (see Fold), so one token set
// serves LIKE and ILIKE. A token is HMAC-SHA256 under the column's search
// key of a domain-separated encoding of the word or trigram, truncated to
// its first 8 bytes and read as a big-endian int64.
//
// # Storage
//
// Tokens are stored as an int8[] column, sorted ascending and without
// duplicates, indexed with PostgreSQL's default GIN operator class for
// arrays:
//
//	CREATE INDEX ON t USING gin (c_search);
//	SELECT ... WHERE c_search @> $1::int8[] AND ...
//
// int8 is the most compact form GIN indexes natively (8 bytes a token, no
// text encoding); pgx encodes a []int64 as int8[] directly, and
// AppendArrayText gives the text form ('{1,-2,3}') for the simple
// protocol.
//
// # Prefilter
//
// TokensForSegments turns the literal runs of a LIKE or ILIKE pattern
// (Segment, as the caller's one LIKE parser finds them) into the tokens that
// every matching text must contain: the trigrams (and the complete words)
// of each run, with the start and end markers where the run is anchored at
// the pattern's start or end. A % or _ ends a run, and a run contributes only if it has three runes or more
// counting its markers ('ab%' gives ^ab; '%ab%' gives nothing). The server evaluates c_search @> tokens, and the
// proxy then evaluates the exact predicate on the decrypted candidates, so
// LIKE semantics stay exact: the prefilter may let through rows that do not
// match (false positives), never drop rows that do (no false negatives).
// An empty token set means that no prefilter is possible (for example
// '%a%' or 'a_b'): the proxy must then check every row.
//
// No false negatives holds for LIKE with any deterministic collation
// (matching is by code point), and for ILIKE when the server's lower() maps
// each character to a character of the same Unicode simple case-folding
// class: true of the C collation (ASCII only) and of libc collations such
// as C.UTF-8 and en_US.UTF-8. ICU collations, whose lower() applies full
// case mappings that change the number of characters (U+0130 to "i" plus
// U+0307), and characters newer than Go's Unicode tables, are out of
// scope. Texts are not Unicode-normalised: LIKE compares code points, so
// "é" precomposed and "e" + U+0301 are different texts, as on the server.
//
// # Leakage
//
// The server learns, for each row: the number of distinct tokens (about
// the text's length in runes plus its number of distinct words), and which
// rows share which tokens, so which rows have words or trigrams in common
// and how often each token occurs (open to frequency analysis, like DET on
// each word and trigram). Sorting hides the order of the tokens in the
// text. From each prefiltered query it learns the query's tokens and the
// rows that contain them. Tokens are keyed per column, so equal words in
// different columns give unrelated tokens.
package search

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"
)

const (
	// KeySize is the size, in bytes, of a search key (an HMAC-SHA256 key).
	KeySize = 32
)

// Markers framing a text for its trigrams. They lie above the last Unicode
// code point, so no text contains them.
const (
	markStart rune = unicode.MaxRune + 1 + iota
	markEnd
)

// Domain separation tags, the first byte of every MAC input.
const (
	tagWord    byte = 'w'
	tagTrigram byte = 't'
)

// Tokenizer computes the tokens of one column's texts and patterns under
// its search key. It is safe for concurrent use.
type Tokenizer struct {
	key  []byte
	macs sync.Pool // of *macState
}

type macState struct {
	h   hash.Hash
	buf []byte
	sum []byte
}

// New returns a Tokenizer with key (KeySize bytes). The key is copied.
func New(key []byte) (*Tokenizer, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("search: invalid key size %d, want %d bytes", len(key), KeySize)
	}
	z := &Tokenizer{key: append([]byte(nil), key...)}
	z.macs.New = func() any {
		return &macState{h: hmac.New(sha256.New, z.key), buf: make([]byte, 0, 64), sum: make([]byte, 0, sha256.Size)}
	}
	return z, nil
}

// mac returns the token of msg: the first 8 bytes of HMAC-SHA256(key, msg)
// as a big-endian int64.
func (m *macState) mac(msg []byte) int64 {
	m.h.Reset()
	m.h.Write(msg)
	m.sum = m.h.Sum(m.sum[:0])
	return int64(binary.BigEndian.Uint64(m.sum))
}

func (m *macState) word(w []rune) int64 {
	m.buf = append(m.buf[:0], tagWord)
	for _, r := range w {
		m.buf = utf8.AppendRune(m.buf, r)
	}
	return m.mac(m.buf)
}

func (m *macState) wordString(w string) int64 {
	m.buf = append(append(m.buf[:0], tagWord), w...)
	return m.mac(m.buf)
}

func (m *macState) trigram(packed uint64) int64 {
	m.buf = append(m.buf[:0], tagTrigram)
	m.buf = binary.BigEndian.AppendUint64(m.buf, packed)
	return m.mac(m.buf)
}

// pack packs three runes (or markers, all below 2^21) into 63 bits.
func pack(a, b, c rune) uint64 {
	return uint64(a)<<42 | uint64(b)<<21 | uint64(c)
}

// Fold returns the case-folded form of r that tokens are computed on: the
// smallest rune of the Unicode simple case-folding orbit of
// unicode.ToLower(r). Runes that differ only in case (including the Kelvin
// sign and K, or U+0130 and I) fold to the same rune. For ASCII letters
// Fold is upper-casing.
func Fold(r rune) rune {
	if r < utf8.RuneSelf {
		if 'a' <= r && r <= 'z' {
			return r - 'a' + 'A'
		}
		return r
	}
	r = unicode.ToLower(r)
	low := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		low = min(low, f)
	}
	return low
}

// IsWordRune reports whether r belongs to words: a letter, mark or digit
// (Unicode categories L, M and N).
func IsWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.N)
}

func foldRunes(dst []rune, s string) []rune {
	for _, r := range s {
		dst = append(dst, Fold(r))
	}
	return dst
}

// Tokens returns the tokens of text: sorted, without duplicates, never
// empty. text is treated as UTF-8; invalid bytes count as U+FFFD, as
// PostgreSQL never stores them in text.
func (z *Tokenizer) Tokens(text string) []int64 {
	return z.AppendTokens(nil, text)
}

// AppendTokens appends the tokens of text (see Tokens) to dst and returns
// the extended slice; the appended part is sorted and without duplicates.
func (z *Tokenizer) AppendTokens(dst []int64, text string) []int64 {
	runes := foldRunes(make([]rune, 0, len(text)+2), text)
	m := z.macs.Get().(*macState)
	defer z.macs.Put(m)
	start := len(dst)

	// Trigrams over the framed text, deduplicated before hashing.
	tris := make([]uint64, 0, len(runes)+1)
	if len(runes) == 0 {
		tris = append(tris, pack(markStart, markEnd, markEnd))
	} else {
		prev2, prev1 := markStart, runes[0]
		for _, r := range runes[1:] {
			tris = append(tris, pack(prev2, prev1, r))
			prev2, prev1 = prev1, r
		}
		tris = append(tris, pack(prev2, prev1, markEnd))
	}
	slices.Sort(tris)
	tris = slices.Compact(tris)
	for _, t := range tris {
		dst = append(dst, m.trigram(t))
	}

	// Words, deduplicated before hashing.
	var words []string
	for i := 0; i < len(runes); {
		if !IsWordRune(runes[i]) {
			i++
			continue
		}
		j := i
		for j < len(runes) && IsWordRune(runes[j]) {
			j++
		}
		words = append(words, string(runes[i:j]))
		i = j
	}
	slices.Sort(words)
	words = slices.Compact(words)
	for _, w := range words {
		dst = append(dst, m.wordString(w)) // string(runes) is their UTF-8
	}
	out := dst[start:]
	slices.Sort(out)
	return dst[:start+len(slices.Compact(out))]
}

// WordTokens returns the tokens of the words of query (sorted, without
// duplicates): a text contains every word of query, case-insensitively, only
// if its tokens contain these. It returns nil when query has no words.
func (z *Tokenizer) WordTokens(query string) []int64 {
	runes := foldRunes(nil, query)
	m := z.macs.Get().(*macState)
	defer z.macs.Put(m)
	var out []int64
	for i := 0; i < len(runes); {
		if !IsWordRune(runes[i]) {
			i++
			continue
		}
		j := i
		for j < len(runes) && IsWordRune(runes[j]) {
			j++
		}
		out = append(out, m.word(runes[i:j]))
		i = j
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Segment is a maximal run of literal characters of a LIKE pattern
// (escapes removed); AnchoredStart says that nothing precedes it in the
// pattern (a matching text starts with it), AnchoredEnd that nothing
// follows it. Literal is empty only for the empty pattern, which is one
// segment anchored at both ends.
type Segment struct {
	Literal                    string
	AnchoredStart, AnchoredEnd bool
}

// TokensForSegments returns the tokens that the tokens of every text
// containing the segments (as a LIKE or ILIKE pattern with these literal
// runs requires) must contain, sorted and without duplicates. Tokens are
// case-folded, so LIKE and ILIKE patterns give the same tokens.
//
// It returns nil when no prefilter is possible: no run is long enough
// (or there are none, for a pattern of wildcards only or one the caller
// cannot prefilter).
func (z *Tokenizer) TokensForSegments(segs []Segment) []int64 {
	m := z.macs.Get().(*macState)
	defer z.macs.Put(m)
	var out []int64
	for _, seg := range segs {
		runes := make([]rune, 0, len(seg.Literal)+2)
		if seg.AnchoredStart {
			runes = append(runes, markStart)
		}
		runes = foldRunes(runes, seg.Literal)
		if seg.AnchoredEnd {
			runes = append(runes, markEnd)
		}
		if seg.AnchoredStart && seg.AnchoredEnd && seg.Literal == "" {
			// The empty pattern: the token of the empty text.
			out = append(out, m.trigram(pack(markStart, markEnd, markEnd)))
			continue
		}
		for i := 0; i+3 <= len(runes); i++ {
			out = append(out, m.trigram(pack(runes[i], runes[i+1], runes[i+2])))
		}
		// Complete words: word runs bounded on both sides inside the
		// framed run (a marker or a non-word rune).
		for i := 0; i < len(runes); {
			if runes[i] >= markStart || !IsWordRune(runes[i]) {
				i++
				continue
			}
			j := i
			for j < len(runes) && runes[j] < markStart && IsWordRune(runes[j]) {
				j++
			}
			if i > 0 && j < len(runes) {
				out = append(out, m.word(runes[i:j]))
			}
			i = j
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// AppendArrayText appends the PostgreSQL text form of tokens as an int8[]
// ("{1,-2,3}") to dst and returns the extended slice.
func AppendArrayText(dst []byte, tokens []int64) []byte {
	dst = append(dst, '{')
	for i, t := range tokens {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, t, 10)
	}
	return append(dst, '}')
}

// Contains reports whether the sorted token set have contains every token
// of the sorted token set want: the proxy-side equivalent of the server's
// have @> want.
func Contains(have, want []int64) bool {
	i := 0
	for _, w := range want {
		for i < len(have) && have[i] < w {
			i++
		}
		if i == len(have) || have[i] != w {
			return false
		}
	}
	return true
}
