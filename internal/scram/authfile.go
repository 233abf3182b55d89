package scram

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Users maps a user name to its verifier.
type Users map[string]*Verifier

// ReadAuthFile reads a user list in PgBouncer's auth_file format: one user
// per line, `"name" "secret"`, where secret is a SCRAM-SHA-256 verifier (as
// printed by `proxy passwd`) or a plaintext password (turned into a verifier
// on load). Lines starting with ';' or '#' and blank lines are ignored.
// MD5 secrets are refused.
func ReadAuthFile(path string) (Users, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseAuthFile(f, path)
}

// ParseAuthFile parses the auth_file format from r; name is used in errors.
func ParseAuthFile(r io.Reader, name string) (Users, error) {
	users := Users{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == ';' || text[0] == '#' {
			continue
		}
		fields, err := quotedFields(text)
		if err != nil || len(fields) != 2 || fields[0] == "" {
			return nil, fmt.Errorf("%s:%d: want `\"user\" \"secret\"`", name, line)
		}
		user, secret := fields[0], fields[1]
		var v *Verifier
		switch {
		case strings.HasPrefix(secret, "SCRAM-SHA-256$"):
			v, err = ParseVerifier(secret)
		case strings.HasPrefix(secret, "md5") && len(secret) == 35:
			err = fmt.Errorf("MD5 secrets are not supported; use a SCRAM-SHA-256 verifier (proxy passwd %s)", user)
		default:
			v, err = NewVerifier(secret, DefaultIterations)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: user %q: %w", name, line, user, err)
		}
		if _, dup := users[user]; dup {
			return nil, fmt.Errorf("%s:%d: user %q listed twice", name, line, user)
		}
		users[user] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return users, nil
}

// quotedFields splits `"a" "b ""c"""` into [a, b "c"] (a doubled quote
// stands for one quote, as in PgBouncer).
func quotedFields(s string) ([]string, error) {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return out, nil
		}
		if s[0] != '"' {
			return nil, fmt.Errorf("expected '\"'")
		}
		var b strings.Builder
		i := 1
		for {
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated quote")
			}
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i += 2
					continue
				}
				i++
				break
			}
			b.WriteByte(s[i])
			i++
		}
		out = append(out, b.String())
		s = s[i:]
	}
}
