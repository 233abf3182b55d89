package onion

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// validEncoding is what checkEncoding must accept: valid UTF-8 without NUL.
func validEncoding(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// TestCheckEncoding: the eight-byte fast path accepts and rejects what
// the byte loop does, wherever in a word the NUL or the non-ASCII byte
// falls, and reports the same bytes.
func TestCheckEncoding(t *testing.T) {
	var cases [][]byte
	base := strings.Repeat("abcdefgh", 4)
	for pos := range 20 {
		for _, ins := range []string{"\x00", "é", "\xff", "\xc3", "€", "\xed\xa0\x80", "\x7f", "\x01"} {
			cases = append(cases, []byte(base[:pos]+ins+base[pos:]))
		}
	}
	cases = append(cases, nil, []byte(""), []byte(base), []byte("0123456"), []byte("01234567\x80"))
	for _, c := range cases {
		err := checkEncoding(c)
		if (err == nil) != validEncoding(c) {
			t.Errorf("%q: checkEncoding %v, valid %v", c, err, validEncoding(c))
		}
	}
	err := checkEncoding([]byte("abcdefghij\xc3("))
	if err == nil || !strings.Contains(err.Error(), "0xc3 0x28") {
		t.Errorf("error for an invalid sequence after a word: %v", err)
	}
}

func FuzzCheckEncoding(f *testing.F) {
	f.Add([]byte("abcdefgh\x00"))
	f.Add([]byte("abcdefghé"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if (checkEncoding(b) == nil) != validEncoding(b) {
			t.Fatalf("%q: checkEncoding disagrees with utf8.Valid and no NUL", b)
		}
	})
}

// TestCharLength: character(n) pads with spaces to n characters, counted
// in characters, and cuts trailing spaces beyond n.
func TestCharLength(t *testing.T) {
	typ := Type{Base: Char, Length: 4}
	for _, c := range []struct{ in, want, err string }{
		{in: "ab", want: "ab  "},
		{in: "éé", want: "éé  "},
		{in: "abcd", want: "abcd"},
		{in: "abcd   ", want: "abcd"},
		{in: "ééééé", err: "22001"},
		{in: "", want: "    "},
	} {
		v, err := typ.applyLength(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), "too long") {
				t.Errorf("%q: %v, want a truncation error", c.in, err)
			}
			continue
		}
		if err != nil || v.s != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, v.s, err, c.want)
		}
	}
}

// BenchmarkCheckEncoding checks a value like sysbench's c column.
func BenchmarkCheckEncoding(b *testing.B) {
	s := []byte(strings.Repeat("83868641912-", 10)[:119])
	b.SetBytes(int64(len(s)))
	for range b.N {
		if err := checkEncoding(s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCharPad pads a character(120) value of 119 characters.
func BenchmarkCharPad(b *testing.B) {
	typ := Type{Base: Char, Length: 120}
	s := strings.Repeat("83868641912-", 10)[:119]
	for range b.N {
		if _, err := typ.applyLength(s); err != nil {
			b.Fatal(err)
		}
	}
}
