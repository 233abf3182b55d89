package onion

import (
	"strings"
	"unicode/utf8"
)

// isSpace is C's isspace in the C locale, which PostgreSQL's input
// functions use.
func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlpha(c byte) bool { return (c|0x20) >= 'a' && (c|0x20) <= 'z' }

func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

// isPunct is C's ispunct in the C locale.
func isPunct(c byte) bool {
	return c > ' ' && c < 0x7f && !isAlnum(c)
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// parseInt is PostgreSQL 15's pg_strtoint16/32/64: optional whitespace,
// an optional sign, at least one digit, optional whitespace. Overflow is
// detected while reading digits, before trailing junk.
func parseInt(s string, bits uint, typ string) (Value, error) {
	lo := int64(-1) << (bits - 1) // the most negative value
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && s[i] == '-' {
		neg = true
		i++
	} else if i < len(s) && s[i] == '+' {
		i++
	}
	if i >= len(s) || !isDigit(s[i]) {
		return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type %s: \"%s\"", typ, s)
	}
	// Accumulate negatively, as the C code does, so that the most
	// negative value is representable.
	var acc int64
	for i < len(s) && isDigit(s[i]) {
		d := int64(s[i] - '0')
		if acc < lo/10 || acc*10 < lo+d {
			return Value{}, pgErr(codeNumericOutOfRange, "value \"%s\" is out of range for type %s", s, typ)
		}
		acc = acc*10 - d
		i++
	}
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i != len(s) {
		return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type %s: \"%s\"", typ, s)
	}
	if !neg {
		if acc == lo {
			return Value{}, pgErr(codeNumericOutOfRange, "value \"%s\" is out of range for type %s", s, typ)
		}
		acc = -acc
	}
	return IntValue(acc), nil
}

// parseBool is PostgreSQL's boolin: whitespace around, then a
// case-insensitive prefix of true, false, yes, no, at least "on"/"of" of on
// and off, or exactly 1 or 0.
func parseBool(in string) (Value, error) {
	s := in
	for len(s) > 0 && isSpace(s[0]) {
		s = s[1:]
	}
	for len(s) > 0 && isSpace(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	prefixOf := func(word string, minLen int) bool {
		return len(s) >= minLen && len(s) <= len(word) && strings.EqualFold(s, word[:len(s)])
	}
	if len(s) > 0 {
		switch lower(s[0]) {
		case 't':
			if prefixOf("true", 1) {
				return BoolValue(true), nil
			}
		case 'f':
			if prefixOf("false", 1) {
				return BoolValue(false), nil
			}
		case 'y':
			if prefixOf("yes", 1) {
				return BoolValue(true), nil
			}
		case 'n':
			if prefixOf("no", 1) {
				return BoolValue(false), nil
			}
		case 'o':
			if prefixOf("on", 2) {
				return BoolValue(true), nil
			}
			if prefixOf("off", 2) {
				return BoolValue(false), nil
			}
		case '1':
			if len(s) == 1 {
				return BoolValue(true), nil
			}
		case '0':
			if len(s) == 1 {
				return BoolValue(false), nil
			}
		}
	}
	return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type boolean: \"%s\"", in)
}

// parseByteaText is PostgreSQL's byteain: "\x" followed by hex digits
// (whitespace allowed between pairs), or the escape format (backslash
// followed by three octal digits, or by a second backslash).
func parseByteaText(s string) (Value, error) {
	if len(s) >= 2 && s[0] == '\\' && s[1] == 'x' {
		out := make([]byte, 0, (len(s)-2)/2)
		for i := 2; i < len(s); {
			c := s[i]
			if c == ' ' || c == '\n' || c == '\t' || c == '\r' {
				i++
				continue
			}
			hi, ok := hexVal(c)
			if !ok {
				return Value{}, badHexDigit(s[i:])
			}
			i++
			if i >= len(s) {
				return Value{}, pgErr(codeInvalidParameterValue, "invalid hexadecimal data: odd number of digits")
			}
			lo, ok := hexVal(s[i])
			if !ok {
				return Value{}, badHexDigit(s[i:])
			}
			i++
			out = append(out, hi<<4|lo)
		}
		return BytesValue(out), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		switch {
		case s[i] != '\\':
			out = append(out, s[i])
			i++
		case i+3 < len(s) && s[i+1] >= '0' && s[i+1] <= '3' && s[i+2] >= '0' && s[i+2] <= '7' && s[i+3] >= '0' && s[i+3] <= '7':
			out = append(out, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 4
		case i+1 < len(s) && s[i+1] == '\\':
			out = append(out, '\\')
			i += 2
		default:
			return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type bytea")
		}
	}
	return BytesValue(out), nil
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// badHexDigit reports the (whole, possibly multibyte) character at the
// start of s, as PostgreSQL does.
func badHexDigit(s string) error {
	_, n := utf8.DecodeRuneInString(s)
	return pgErr(codeInvalidParameterValue, "invalid hexadecimal digit: \"%s\"", s[:n])
}

// parseUUIDText is PostgreSQL's uuid_in: 32 hex digits (either case), a
// hyphen allowed after any even number of them but the last, optionally
// in braces; nothing else, not even white space.
func parseUUIDText(s string) (Value, error) {
	bad := func() (Value, error) {
		return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type uuid: \"%s\"", s)
	}
	src := s
	braces := len(src) > 0 && src[0] == '{'
	if braces {
		src = src[1:]
	}
	out := make([]byte, 16)
	for i := range out {
		if len(src) < 2 {
			return bad()
		}
		hi, ok1 := hexVal(src[0])
		lo, ok2 := hexVal(src[1])
		if !ok1 || !ok2 {
			return bad()
		}
		out[i] = hi<<4 | lo
		src = src[2:]
		if len(src) > 0 && src[0] == '-' && i%2 == 1 && i < 15 {
			src = src[1:]
		}
	}
	if braces {
		if len(src) == 0 || src[0] != '}' {
			return bad()
		}
		src = src[1:]
	}
	if src != "" {
		return bad()
	}
	return BytesValue(out), nil
}

// appendUUIDText appends uuid_out's form of the 16 bytes u: lower-case
// hex digits grouped 8-4-4-4-12.
func appendUUIDText(dst []byte, u string) []byte {
	const hexdigits = "0123456789abcdef"
	for i := 0; i < len(u); i++ {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexdigits[u[i]>>4], hexdigits[u[i]&15])
	}
	return dst
}
