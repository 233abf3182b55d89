package exec

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Byte strings in the proxy's scalar library: encode and decode (hex,
// base64, escape), md5 and the sha2 functions of bytea, and pgcrypto's
// digest, which Django's SHA1 ... SHA512 call as
// encode(digest(col, 'sha1'), 'hex'). digest exists on the server only
// with pgcrypto, which the proxy installs to peel onions; in a database
// without it, the proxy answers where the server would fail with 42883.

var tBytea = onion.Type{Base: onion.Bytea}

// byteaTextRefusal refuses reading a bytea value as text: its text
// depends on the session's bytea_output, which the proxy does not
// follow (it prints bytea values in hex).
func byteaTextRefusal(what string) error {
	return rewrite.Refusal("%s over a bytea value is not supported in a query the proxy computes: its text depends on bytea_output; use encode()", what)
}

func byteaVal(b []byte) Value { return Value{Type: tBytea, Str: string(b)} }

// byteaOrText types a function of one bytea (digest also takes text)
// and more text arguments.
func byteaOrText(name string, textFirst bool, extra int, result onion.Type) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != 1+extra {
			return nil, result, refuseArgs(name, args)
		}
		params := []onion.Type{tBytea}
		switch {
		case args[0].Base == onion.Bytea:
		case textFirst && (isTextType(args[0]) || args[0] == tUnknown):
			params[0] = TypeText
		default:
			return nil, result, refuseArgs(name, args)
		}
		for _, a := range args[1:] {
			if !isTextType(a) && a != tUnknown {
				return nil, result, refuseArgs(name, args)
			}
			params = append(params, TypeText)
		}
		return params, result, nil
	}
}

// digests are the hash functions digest accepts by name.
var digests = map[string]func() hash.Hash{
	"md5": md5.New, "sha1": sha1.New, "sha224": sha256.New224, "sha256": sha256.New,
	"sha384": sha512.New384, "sha512": sha512.New,
}

func sum(h func() hash.Hash, b string) Value {
	x := h()
	x.Write([]byte(b))
	return byteaVal(x.Sum(nil))
}

// byteFuncs are the bytea functions of the library.
func byteFuncs() map[string]*scalarFunc {
	fns := map[string]*scalarFunc{
		"digest": {sig: byteaOrText("digest", true, 1, tBytea), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			h, ok := digests[strings.ToLower(str(a[1]))]
			if !ok {
				return Value{}, rewrite.Refusal("digest with algorithm %q is not supported in a query the proxy computes", str(a[1]))
			}
			return sum(h, a[0].Str), nil
		}},
		"encode": {sig: byteaOrText("encode", false, 1, TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return encodeBytes(a[0].Str, str(a[1]))
		}},
		"decode": {sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
			if len(args) != 2 || !(isTextType(args[0]) || args[0] == tUnknown) || !(isTextType(args[1]) || args[1] == tUnknown) {
				return nil, tBytea, refuseArgs("decode", args)
			}
			return []onion.Type{TypeText, TypeText}, tBytea, nil
		}, call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return decodeBytes(str(a[0]), str(a[1]))
		}},
	}
	for _, name := range []string{"sha224", "sha256", "sha384", "sha512"} {
		h := digests[name]
		fns[name] = &scalarFunc{sig: byteaOrText(name, false, 0, tBytea), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return sum(h, a[0].Str), nil
		}}
	}
	return fns
}

func unknownEncoding(name string) error {
	return &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: fmt.Sprintf("unrecognized encoding: \"%s\"", name)}
}

// encodeBytes is PostgreSQL's encode: hex, base64 (lines of 76
// characters, each ended by a newline) or escape (\\ for a backslash, octal for NUL and bytes
// with the high bit set).
func encodeBytes(b, format string) (Value, error) {
	switch strings.ToLower(format) {
	case "hex":
		return textVal(hex.EncodeToString([]byte(b))), nil
	case "base64":
		// As pg_base64_encode: a newline after every 76 characters of
		// whole groups, even at the end; then the last, padded group.
		whole := len(b) / 3 * 3
		enc := base64.StdEncoding.EncodeToString([]byte(b[:whole]))
		var out strings.Builder
		for len(enc) >= 76 {
			out.WriteString(enc[:76])
			out.WriteByte('\n')
			enc = enc[76:]
		}
		out.WriteString(enc)
		out.WriteString(base64.StdEncoding.EncodeToString([]byte(b[whole:])))
		return textVal(out.String()), nil
	case "escape":
		var out strings.Builder
		for i := 0; i < len(b); i++ {
			switch c := b[i]; {
			case c == '\\':
				out.WriteString(`\\`)
			case c == 0 || c >= 0x80:
				fmt.Fprintf(&out, `\%03o`, c)
			default:
				out.WriteByte(c)
			}
		}
		return textVal(out.String()), nil
	}
	return Value{}, unknownEncoding(format)
}

// decodeBytes is PostgreSQL's decode for hex and base64 (whitespace
// skipped); escape is refused.
func decodeBytes(s, format string) (Value, error) {
	switch strings.ToLower(format) {
	case "hex":
		var clean strings.Builder
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case ' ', '\n', '\t', '\r':
				continue
			}
			clean.WriteByte(s[i])
		}
		b, err := hex.DecodeString(clean.String())
		if err != nil {
			return Value{}, rewrite.Refusal("decode of this hex text is not supported in a query the proxy computes (%v)", err)
		}
		return byteaVal(b), nil
	case "base64":
		clean := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
				return -1
			}
			return r
		}, s)
		b, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return Value{}, rewrite.Refusal("decode of this base64 text is not supported in a query the proxy computes (%v)", err)
		}
		return byteaVal(b), nil
	case "escape":
		return Value{}, rewrite.Refusal("decode(..., 'escape') is not supported in a query the proxy computes")
	}
	return Value{}, unknownEncoding(format)
}
