// Package pglocale holds what PostgreSQL's text operations take from a
// UTF8 database's locale under the libc provider: case mapping under
// LC_CTYPE (upper, lower, ILIKE) and which LC_COLLATE values order text
// byte by byte.
//
// Case: ASCII letters only under C and POSIX (pg_ascii_toupper), else
// towupper_l/towlower_l of the C library, one code point at a time
// (str_toupper's wide-character path). The answer is PostgreSQL's when
// the proxy's C library has the locale and maps case as the server's
// does: the same glibc release (as a PostgreSQL standby must have). A
// locale the proxy cannot load is an error, never an ASCII guess.
package pglocale

/*
#define _GNU_SOURCE
#include <locale.h>
#include <wctype.h>
#include <stdlib.h>

static locale_t pglocale_open(const char *name) {
	return newlocale(LC_CTYPE_MASK, name, (locale_t)0);
}

static void pglocale_map(unsigned int *buf, int n, int upper, locale_t loc) {
	for (int i = 0; i < n; i++) {
		buf[i] = upper ? towupper_l(buf[i], loc) : towlower_l(buf[i], loc);
	}
}
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"
	"unsafe"
)

// ByteOrder reports whether text under LC_COLLATE collate sorts byte by
// byte: C and POSIX (memcmp in varstr_cmp), and glibc's C.UTF-8, whose
// collation is code point order, which is UTF-8 byte order (strcoll, with
// strcmp breaking ties, then agrees with memcmp).
func ByteOrder(collate string) bool {
	switch collate {
	case "C", "POSIX", "C.UTF-8", "C.utf8":
		return true
	}
	return false
}

// IsC reports whether ctype maps only ASCII letters (PostgreSQL's
// lc_ctype_is_c).
func IsC(ctype string) bool { return ctype == "C" || ctype == "POSIX" }

// locales caches the C library's locale objects by name; they are never
// freed (a database has one LC_CTYPE).
var locales sync.Map // string -> C.locale_t

func locale(name string) (C.locale_t, error) {
	if l, ok := locales.Load(name); ok {
		return l.(C.locale_t), nil
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	l := C.pglocale_open(cs)
	if l == nil {
		return nil, fmt.Errorf("pglocale: the proxy's C library has no locale %q", name)
	}
	if prev, loaded := locales.LoadOrStore(name, l); loaded {
		C.freelocale(l)
		return prev.(C.locale_t), nil
	}
	return l, nil
}

// Upper returns upper(s) under LC_CTYPE ctype.
func Upper(ctype, s string) (string, error) { return mapCase(ctype, s, true) }

// Lower returns lower(s) under LC_CTYPE ctype.
func Lower(ctype, s string) (string, error) { return mapCase(ctype, s, false) }

// Check reports whether case can be mapped under ctype here.
func Check(ctype string) error {
	if IsC(ctype) {
		return nil
	}
	if ctype == "" {
		return errors.New("pglocale: the database's LC_CTYPE is not known")
	}
	_, err := locale(ctype)
	return err
}

func mapCase(ctype, s string, upper bool) (string, error) {
	if IsC(ctype) {
		return asciiMap(s, upper), nil
	}
	if err := Check(ctype); err != nil {
		return "", err
	}
	loc, err := locale(ctype)
	if err != nil {
		return "", err
	}
	buf := make([]C.uint, 0, len(s))
	for _, r := range s {
		buf = append(buf, C.uint(r))
	}
	if len(buf) > 0 {
		up := C.int(0)
		if upper {
			up = 1
		}
		C.pglocale_map(&buf[0], C.int(len(buf)), up, loc)
	}
	out := make([]byte, 0, len(s))
	for _, r := range buf {
		out = utf8.AppendRune(out, rune(r))
	}
	return string(out), nil
}

// asciiMap is pg_ascii_toupper/tolower over every byte.
func asciiMap(s string, upper bool) string {
	lo, hi := byte('A'), byte('Z')
	if upper {
		lo, hi = 'a', 'z'
	}
	i := 0
	for i < len(s) && (s[i] < lo || s[i] > hi) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; lo <= c && c <= hi {
			b[i] = c ^ 0x20
		}
	}
	return string(b)
}
