// Package pgarray reads and writes PostgreSQL's one-dimensional arrays
// in their text and binary wire forms (array_in/array_out,
// array_recv/array_send), as bulk statements pass them as parameters.
package pgarray

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ParseText reads the text form of a one-dimensional array
// ({a,"b c",NULL}): its elements, nil for NULL. Explicit bounds
// ([1:2]={a,b}) and nested arrays are refused with 22P02.
func ParseText(s string) ([]*string, error) {
	bad := func(why string) error {
		return &pgconn.PgError{Severity: "ERROR", Code: "22P02", Message: fmt.Sprintf("malformed array literal: %q", s), Detail: why}
	}
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, bad(`array value must start with "{"`)
	}
	body := s[1 : len(s)-1]
	var out []*string
	if strings.TrimSpace(body) == "" {
		return out, nil
	}
	for i := 0; ; {
		for i < len(body) && isArraySpace(body[i]) {
			i++
		}
		var elem strings.Builder
		quoted := false
		if i < len(body) && body[i] == '"' {
			quoted = true
			i++
			for {
				if i >= len(body) {
					return nil, bad("unterminated quoted element")
				}
				c := body[i]
				i++
				if c == '\\' {
					if i >= len(body) {
						return nil, bad("unexpected end after a backslash")
					}
					elem.WriteByte(body[i])
					i++
					continue
				}
				if c == '"' {
					break
				}
				elem.WriteByte(c)
			}
			for i < len(body) && isArraySpace(body[i]) {
				i++
			}
		} else {
			start := i
			for i < len(body) && body[i] != ',' {
				if body[i] == '{' || body[i] == '"' {
					return nil, bad("nested arrays and stray quotes are not supported")
				}
				if body[i] == '\\' {
					i++
					if i >= len(body) {
						return nil, bad("unexpected end after a backslash")
					}
				}
				i++
			}
			raw := strings.TrimRight(body[start:i], " \t\n\r\v\f")
			for j := 0; j < len(raw); j++ {
				if raw[j] == '\\' {
					j++
				}
				elem.WriteByte(raw[j])
			}
			if raw == "" {
				return nil, bad("empty element")
			}
		}
		v := elem.String()
		if !quoted && strings.EqualFold(v, "NULL") {
			out = append(out, nil)
		} else {
			out = append(out, &v)
		}
		if i >= len(body) {
			return out, nil
		}
		if body[i] != ',' {
			return nil, bad("junk after an element")
		}
		i++
	}
}

func isArraySpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
