package engine

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// sessionParams follows the session settings that change how values are
// read and shown (TimeZone, DateStyle), as the server reports them.
type sessionParams struct {
	// maxHeld is the session's Engine.maxHeld: each statement's result
	// gets a heldBudget of it (set once, at the session's start).
	maxHeld int64
	// ctype is the database's LC_CTYPE (Env.CType; set once).
	ctype string

	mu        sync.Mutex
	timeZone  string
	dateStyle string
	env       *onion.Env // nil until computed, or after a change
	envErr    error
}

func (p *sessionParams) set(name, value string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch name {
	case "TimeZone":
		p.timeZone = value
	case "DateStyle":
		p.dateStyle = value
	default:
		return
	}
	p.env, p.envErr = nil, nil
}

// get returns the environment to read and write values in. A setting the
// proxy cannot honour (e.g. DateStyle SQL) is an error: values of date and
// time columns would be shown differently from PostgreSQL.
func (p *sessionParams) get() (onion.Env, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.env == nil && p.envErr == nil {
		env, err := onion.NewEnv(p.dateStyle, p.timeZone)
		if err != nil {
			p.envErr = rewrite.Refusal("the proxy cannot read or show encrypted values with DateStyle %q and TimeZone %q: %v", p.dateStyle, p.timeZone, err)
		} else {
			env.CType = p.ctype
			p.env = &env
		}
	}
	if p.envErr != nil {
		return onion.Env{}, p.envErr
	}
	return *p.env, nil
}

// encrypted is an encrypted catalog column with its encryptor.
type encrypted struct {
	e     *Engine
	table string
	cat   *catalog.Column
	oc    *onion.Column
	typ   onion.Type

	// eqHint is the Eq layer the last decryption found (0: none yet):
	// decrypt tries it first instead of looking the layer up per cell.
	eqHint atomic.Int32
}

func (e *Engine) encrypted(table string, c *catalog.Column) (*encrypted, error) {
	oc, err := e.column(c)
	if err != nil {
		return nil, err
	}
	return &encrypted{e: e, table: table, cat: c, oc: oc, typ: oc.Type()}, nil
}

// layers returns the current layers of the column's Eq and Ord onions:
// from the newest catalog snapshot, since a statement prepared earlier
// may run after a peel. Peeling only goes inward, so the newest snapshot
// is never behind the data this proxy wrote, except for the session
// whose open transaction peeled the column (peelInTx): its plans have
// the inner layer while the shared snapshot still has the outer one.
func (x *encrypted) layers() (eq, ord onion.Layer) {
	eq, ord = onion.Layer(x.cat.Onions["eq"]), onion.Layer(x.cat.Onions["ord"])
	if x.e == nil {
		return eq, ord
	}
	live := x.e.cat.snapshot().ColumnByID(x.cat.ID)
	if live == nil {
		return eq, ord
	}
	leq, lord := onion.Layer(live.Onions["eq"]), onion.Layer(live.Onions["ord"])
	if string(live.KeyID()) != string(x.cat.KeyID()) || live.GroupKey() != x.cat.GroupKey() {
		return leq, lord // re-encrypted since: its layers start afresh
	}
	if eq != onion.LayerDET {
		eq = leq
	}
	if ord != onion.LayerOPE {
		ord = lord
	}
	return eq, ord
}

// encrypt returns the cells of v at the column's current layers: Eq and
// Ord at RND as onion.Encrypt makes them, or, for onions already peeled,
// at DET and OPE.
func (x *encrypted) encrypt(v onion.Value, salt []byte) (onion.Cells, error) {
	eq, ord := x.layers()
	return x.encryptAt(v, salt, eq, ord)
}

// encryptAt is encrypt at layers eq and ord read before (layers), for a
// statement during which they cannot change (a COPY holds the table's
// writes, so no peel ends meanwhile).
func (x *encrypted) encryptAt(v onion.Value, salt []byte, eq, ord onion.Layer) (onion.Cells, error) {
	// A peeled onion holds exactly what peeling the RND layer on the
	// server leaves, so new and peeled cells compare equal.
	if eq != onion.LayerDET {
		eq = onion.LayerRND
	}
	if ord != onion.LayerOPE {
		ord = onion.LayerRND
	}
	return x.oc.EncryptAt(v, salt, eq, ord)
}

// encryptHole returns the cells of hole h's value v: those of encrypt,
// or for an increment (SET c = c + v) only the Add ciphertext of v (of -v
// for c - v).
func (x *encrypted) encryptHole(h rewrite.Hole, v onion.Value, salt []byte) (onion.Cells, error) {
	if h.Increment == 0 {
		return x.encrypt(v, salt)
	}
	add, err := x.oc.EncryptAddDelta(v, h.Increment < 0)
	return onion.Cells{Add: add}, err
}

// incrementValue reads the value of an increment written as a literal:
// it must be a value of the column's type exactly, since PostgreSQL
// rounds each row's sum to the column's type (c + 1.555 on numeric(12,2)
// does not add the same amount to every row).
func (x *encrypted) incrementValue(text string, env onion.Env) (onion.Value, error) {
	exact, err := x.typ.ComparisonType().ParseText([]byte(text), env)
	if err == nil {
		var v onion.Value
		if v, err = x.typ.ParseText([]byte(text), env); err == nil {
			if x.typ.ComparisonType().Compare(exact, v) != 0 {
				return v, rewrite.Refusal("UPDATE ... SET %s = %s + k on encrypted column %s.%s is not supported: the increment k is not a value of %s", x.cat.Name, x.cat.Name, x.table, x.cat.Name, x.typ)
			}
			return v, nil
		}
	}
	if r, ok := new(big.Rat).SetString(strings.TrimSpace(text)); ok && isInteger(x.typ) && !r.IsInt() {
		return onion.Value{}, rewrite.Refusal("UPDATE ... SET %s = %s + k on encrypted column %s.%s is not supported: the increment k is not a value of %s", x.cat.Name, x.cat.Name, x.table, x.cat.Name, x.typ)
	}
	return onion.Value{}, err
}

// decrypt reads a value back from its Eq (and Val) cells. The cell is
// read at the Eq onion's current layer, else at the other one: a row read
// while another proxy peels the onion, or written by a proxy that had not
// yet seen the peel, still decrypts (both layers authenticate, so a wrong
// guess fails rather than giving a wrong value).
func (x *encrypted) decrypt(cells onion.Cells, salt []byte) (onion.Value, error) {
	// The layer of a cell is that of the column when the server read it;
	// a peel may have moved it on since, so a failure tries the other one
	// (a cell at the wrong layer fails authentication).
	var layer onion.Layer
	switch x.eqHint.Load() {
	case 1:
		layer = onion.LayerRND
	case 2:
		layer = onion.LayerDET
	default:
		layer, _ = x.layers()
	}
	other := onion.LayerDET
	if layer == onion.LayerDET {
		other = onion.LayerRND
	}
	v, err := x.oc.DecryptAt(cells, salt, layer)
	if err != nil {
		if w, err2 := x.oc.DecryptAt(cells, salt, other); err2 == nil {
			v, err, layer = w, nil, other
		}
	}
	if err != nil {
		return v, fmt.Errorf("failed to decrypt column %s.%s: %w", x.table, x.cat.Name, err)
	}
	hint := int32(1)
	if layer == onion.LayerDET {
		hint = 2
	}
	x.eqHint.Store(hint)
	return v, nil
}

// Type OIDs of parameters the proxy reads in binary.
const (
	oidInt2    = 21
	oidInt4    = 23
	oidInt8    = 20
	oidText    = 25
	oidVarchar = 1043
	oidBpchar  = 1042
	oidUnknown = 705
	oidBytea   = 17
	oidFloat4  = 700
	oidFloat8  = 701
	oidUUID    = 2950
	oidBool    = 16

	uuidTextLen = 36 // 8-4-4-4-12 hex digits
	oidInt8Arr  = 1016
)

// cellOID is the type OID of a cell parameter of PostgreSQL type sqlType
// (onion.CellSQLType): a uuid's binary form is its 16 bytes, a bytea's
// its bytes.
func cellOID(sqlType string) uint32 {
	if sqlType == "uuid" {
		return oidUUID
	}
	return oidBytea
}

// decodeParam reads a client parameter bound for an encrypted column of
// type t: declared is the type the client declared (0 when it let the
// server infer it, in which case the client was told t), format 0 text or
// 1 binary. Values that PostgreSQL would reject get its SQLSTATE.
func decodeParam(x *encrypted, declared uint32, format int16, raw []byte, env onion.Env) (onion.Value, error) {
	t := x.typ
	if raw == nil {
		return onion.Null(), nil
	}
	if format == 0 {
		return t.ParseText(raw, env)
	}
	if format != 1 {
		return onion.Value{}, &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: fmt.Sprintf("unsupported format code: %d", format)}
	}
	switch declared {
	case 0, t.OID():
		return t.ParseBinary(raw)
	case oidText, oidVarchar, oidBpchar, oidUnknown:
		return t.ParseText(raw, env)
	case oidInt2, oidInt4, oidInt8:
		if t.Base != onion.SmallInt && t.Base != onion.Integer && t.Base != onion.BigInt {
			break
		}
		i, err := binaryInt(declared, raw)
		if err != nil {
			return onion.Value{}, err
		}
		v := onion.IntValue(i)
		if !t.Valid(v) {
			return onion.Value{}, &pgconn.PgError{Severity: "ERROR", Code: "22003", Message: t.String() + " out of range"}
		}
		return v, nil
	}
	if v, ok, err := convertBinaryParam(t, declared, raw, env); ok || err != nil {
		return v, err
	}
	if t.Base == onion.Text || t.Base == onion.Varchar {
		// A value the proxy reads as text (a CASE branch of a
		// bulk_update, cast to the column's type after): the binary
		// value's text form, which reads back as the same value.
		for _, b := range binaryAsText {
			if st := (onion.Type{Base: b}); st.OID() == declared {
				v, err := st.ParseBinary(raw)
				if err != nil {
					return v, err
				}
				return t.ParseText(st.AppendText(nil, v, env), env)
			}
		}
	}
	return onion.Value{}, rewrite.Refusal("a binary parameter of type OID %d for encrypted column %s.%s (%s) is not supported; send it in text format or as %s", declared, x.table, x.cat.Name, t, t)
}

// binaryAsText are the types of binary parameters read as their text
// form where the proxy expects text.
var binaryAsText = []onion.Base{onion.Inet, onion.Cidr, onion.UUID, onion.Float8, onion.Float4, onion.Date,
	onion.Timestamp, onion.Timestamptz, onion.Time, onion.Interval, onion.Numeric, onion.Boolean}

// binaryInt reads a binary int2, int4 or int8 parameter.
func binaryInt(declared uint32, raw []byte) (int64, error) {
	switch {
	case declared == oidInt2 && len(raw) == 2:
		return int64(int16(binary.BigEndian.Uint16(raw))), nil
	case declared == oidInt4 && len(raw) == 4:
		return int64(int32(binary.BigEndian.Uint32(raw))), nil
	case declared == oidInt8 && len(raw) == 8:
		return int64(binary.BigEndian.Uint64(raw)), nil
	}
	return 0, &pgconn.PgError{Severity: "ERROR", Code: "22P03", Message: "incorrect binary data format in bind parameter"}
}

// Type OIDs of the date and time parameters convertBinaryParam reads.
const (
	oidDate        = 1082
	oidTimestamp   = 1114
	oidTimestamptz = 1184
)

// pgEpochUnix is where PostgreSQL's binary dates and timestamps count
// from (2000-01-01 UTC), in Unix seconds.
const pgEpochUnix = 946_684_800

// fromPGMicros is the UTC time of a binary timestamp (time.Duration would
// overflow past 292 years).
func fromPGMicros(us int64) time.Time {
	sec, rem := us/1_000_000, us%1_000_000
	if rem < 0 {
		sec, rem = sec-1, rem+1_000_000
	}
	return time.Unix(sec+pgEpochUnix, rem*1000).UTC()
}

// toPGMicros is the binary timestamp of t.
func toPGMicros(t time.Time) int64 {
	return (t.Unix()-pgEpochUnix)*1_000_000 + int64(t.Nanosecond()/1000)
}

// convertBinaryParam reads a binary parameter of another type than column
// type t as the server would assign it to the column: a timestamp for a
// timestamptz column is read in the session's TimeZone (drivers send
// naive datetimes so), a timestamptz for a timestamp column is shown in
// it, a date is midnight, an integer fills a numeric. ok is false for
// other pairs.
func convertBinaryParam(t onion.Type, declared uint32, raw []byte, env onion.Env) (v onion.Value, ok bool, err error) {
	badFormat := &pgconn.PgError{Severity: "ERROR", Code: "22P03", Message: "incorrect binary data format in bind parameter"}
	loc := env.TimeZone
	if loc == nil {
		loc = time.UTC
	}
	// micros is a timestamp's binary form; wall is whether it is a wall
	// clock time (timestamp, date) rather than an instant (timestamptz).
	var micros int64
	var wall bool
	switch declared {
	case oidTimestamp, oidTimestamptz:
		if len(raw) != 8 {
			return v, true, badFormat
		}
		micros, wall = int64(binary.BigEndian.Uint64(raw)), declared == oidTimestamp
	case oidDate:
		if len(raw) != 4 {
			return v, true, badFormat
		}
		days := int64(int32(binary.BigEndian.Uint32(raw)))
		switch days {
		case math.MaxInt32:
			micros = math.MaxInt64
		case math.MinInt32:
			micros = math.MinInt64
		default:
			micros = days * 86_400_000_000
		}
		wall = true
	case oidInt2, oidInt4, oidInt8:
		if t.Base != onion.Numeric {
			return v, false, nil
		}
		i, err := binaryInt(declared, raw)
		if err != nil {
			return v, true, err
		}
		v, err = t.ParseText(strconv.AppendInt(nil, i, 10), env)
		return v, true, err
	default:
		return v, false, nil
	}
	switch t.Base {
	case onion.Timestamp, onion.Timestamptz:
	default:
		return v, false, nil
	}
	finite := micros != math.MaxInt64 && micros != math.MinInt64
	if finite && wall != (t.Base == onion.Timestamp) {
		// Between a wall clock time and an instant: through the
		// session's time zone.
		if wall {
			w := fromPGMicros(micros)
			micros = toPGMicros(time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc))
		} else {
			l := fromPGMicros(micros).In(loc)
			micros = toPGMicros(time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC))
		}
	}
	v, err = t.ParseBinary(binary.BigEndian.AppendUint64(nil, uint64(micros)))
	return v, true, err
}

// cellBytes reads a bytea or uuid cell of a result row, in binary format
// or in text form: a uuid's (onion.CellSQLType), or either of a bytea's
// (hex, or escape when the session set bytea_output). Text of a uuid's
// length and form is read as a uuid: a bytea cell in escape form would
// have to be 36 bytes of ciphertext that are all hex digits with dashes
// in the places of a uuid's (a chance of 2^-128), and in hex form it
// starts with \x.
func cellBytes(raw []byte, binaryFormat bool) ([]byte, error) {
	if raw == nil || binaryFormat {
		return raw, nil
	}
	if len(raw) == uuidTextLen && raw[0] != '\\' {
		out := make([]byte, 16)
		if onion.DecodeUUIDText(out, raw) {
			return out, nil
		}
	}
	if len(raw) >= 2 && raw[0] == '\\' && raw[1] == 'x' {
		out := make([]byte, hex.DecodedLen(len(raw)-2))
		if _, err := hex.Decode(out, raw[2:]); err != nil {
			return nil, fmt.Errorf("engine: malformed bytea from the server: %w", err)
		}
		return out, nil
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c != '\\':
			out = append(out, c)
		case i+1 < len(raw) && raw[i+1] == '\\':
			out = append(out, '\\')
			i++
		case i+3 < len(raw) && isOctal(raw[i+1]) && isOctal(raw[i+2]) && isOctal(raw[i+3]):
			out = append(out, (raw[i+1]-'0')<<6|(raw[i+2]-'0')<<3|(raw[i+3]-'0'))
			i += 3
		default:
			return nil, errors.New("engine: malformed bytea (escape format) from the server")
		}
	}
	return out, nil
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// sum decrypts the concatenated Add ciphertexts of a group (the server's
// string_agg): their product modulo n² encrypts the sum. No ciphertexts
// (no rows, or only NULLs) is NULL, like SUM.
func (x *encrypted) sum(cells []byte) (onion.Value, error) {
	if cells == nil {
		return onion.Null(), nil
	}
	size := x.oc.AddCiphertextSize()
	if size == 0 || len(cells)%size != 0 {
		return onion.Value{}, fmt.Errorf("failed to decrypt a sum of column %s.%s: %w", x.table, x.cat.Name, onion.ErrDecrypt)
	}
	sk := x.oc.PaillierKey()
	acc := sk.NewAccumulator()
	for i := 0; i < len(cells); i += size {
		if err := acc.AddBytes(cells[i : i+size]); err != nil {
			return onion.Value{}, fmt.Errorf("failed to decrypt a sum of column %s.%s: %w", x.table, x.cat.Name, onion.ErrDecrypt)
		}
	}
	v, err := x.oc.DecryptSum(sk.AppendCiphertext(nil, acc.Sum()))
	if err != nil {
		return v, fmt.Errorf("failed to decrypt a sum of column %s.%s: %w", x.table, x.cat.Name, err)
	}
	return v, nil
}
