package onion

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"
)

func be16(vs ...int) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint16(b, uint16(v))
	}
	return b
}

func be32(v int64) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func be64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// malformedBinary returns hand-made binary inputs for a base type: bad
// lengths, out-of-range values and the corners of the numeric format.
func malformedBinary(b Base) [][]byte {
	switch b {
	case SmallInt, Integer, BigInt:
		return [][]byte{{}, {1}, {1, 2, 3}, {1, 2, 3, 4, 5}, make([]byte, 9), {0x80, 0}, {0x7f, 0xff, 0xff, 0xff}}
	case Boolean:
		return [][]byte{{}, {2}, {0xff}, {0, 0}, {1}, {0}}
	case Date:
		return [][]byte{{}, {1, 2, 3}, make([]byte, 5), be32(math.MinInt32), be32(math.MaxInt32), be32(math.MinInt32 + 1),
			be32(-pgEpochJD), be32(-pgEpochJD - 1), be32(dateEndJulian - pgEpochJD - 1), be32(dateEndJulian - pgEpochJD), be32(0), be32(-1)}
	case Timestamp, Timestamptz:
		return [][]byte{{}, make([]byte, 7), make([]byte, 9), be64(math.MinInt64), be64(math.MaxInt64), be64(math.MinInt64 + 1),
			be64(minTimestamp), be64(minTimestamp - 1), be64(endTimestamp - 1), be64(endTimestamp), be64(0), be64(-1), be64(1)}
	case Text, Varchar, Char:
		return [][]byte{{}, []byte("a\x00b"), {0xc3, 0x28}, {0xff}, []byte("abc\xe2\x82"), []byte("日本語日本語  "), []byte("abcdef"), []byte("ab   ")}
	case Bytea:
		return [][]byte{{}, {0}, {0xff, 0}, []byte("\\x00")}
	case UUID:
		return [][]byte{{}, make([]byte, 15), make([]byte, 16), make([]byte, 17), []byte("0123456789abcdef")}
	case JSONB:
		return [][]byte{{}, {1}, {2, '1'}, {1, '1'}, append([]byte{1}, `{"b":1,"a":[1.50]}`...), {1, 0xff}, append([]byte{1}, `{`...)}
	case Interval:
		return [][]byte{{}, make([]byte, 15), make([]byte, 16), make([]byte, 17), be64(-1), append(be64(1), be64(-1)...)}
	case Inet, Cidr:
		return [][]byte{{2, 24, 1, 4, 10, 1, 2, 0}, {2, 24, 0, 4, 10, 1, 2, 3}, {2, 0, 1, 4, 0, 0, 0, 0}, {3, 120, 1, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0},
			{3, 120, 1, 16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, {2, 7, 1, 4, 254, 0, 0, 0}, {2, 7, 1, 4, 255, 0, 0, 0},
			{}, {2, 32, 0}, {2, 32, 0, 4, 1, 2, 3, 4}, {2, 33, 0, 4, 1, 2, 3, 4}, {2, 24, 1, 4, 1, 2, 3, 4}, {4, 32, 0, 4, 1, 2, 3, 4},
			{2, 32, 0, 16, 1, 2, 3, 4}, {2, 32, 0, 4, 1, 2, 3}, {2, 32, 0, 4, 1, 2, 3, 4, 5}, append([]byte{3, 64, 0, 16}, make([]byte, 16)...), append([]byte{3, 129, 0, 16}, make([]byte, 16)...)}
	case Time:
		return [][]byte{{}, make([]byte, 7), make([]byte, 8), be64(-1), be64(86400000000), be64(86400000001), be64(1), be64(math.MaxInt64)}
	case Float8:
		return [][]byte{{}, make([]byte, 7), make([]byte, 8), make([]byte, 9), be64(math.MinInt64), be64(-1), be64(0x7ff0000000000001), be64(0x7ff8000000000000),
			be64(-0x10000000000000), be64(0x7ff0000000000000), be64(1), be64(0x3ff8000000000000)}
	case Float4:
		return [][]byte{{}, make([]byte, 3), make([]byte, 4), make([]byte, 5), be32(0x80000000), be32(0xffffffff), be32(0x7f800001), be32(0x7fc00000),
			be32(0xff800000), be32(0x7f800000), be32(1), be32(0x3fc00000), be32(0x00800000)}
	case Numeric:
		return [][]byte{
			{}, {0}, be16(0), be16(0, 0), be16(0, 0, 0), be16(0, 0, 0, 0), be16(1, 0, 0, 0), be16(1, 0, 0, 0, 1, 2),
			be16(0, 0, 0x1234, 0), be16(0, 0, 0x4000, 0x4000), be16(0, 0, 0, 0x3fff), be16(0, 0, 0, 0x8000),
			be16(1, 0, 0, 0, 10000), be16(1, 0, 0, 0, 0xffff), be16(3001, 0, 0, 0), be16(3000, 0, 0, 0),
			be16(0, 0, 0xC000, 0), be16(1, 5, 0xC000, 7, 1234), be16(0, 0, 0xD000, 0), be16(0, 0, 0xF000, 3),
			be16(0, 0, 0x4000, 2), be16(0, 7, 0, 0), be16(3, 2, 0, 0, 0, 0, 1), be16(3, 2, 0x4000, 4, 0, 12, 3400),
			be16(2, 0, 0, 2, 1, 5000), be16(2, 0, 0, 1, 1, 5000), be16(2, 0, 0, 0, 1, 5000), be16(2, 0, 0x4000, 0, 1, 9999),
			be16(1, 0x7fff, 0, 0, 1), be16(1, 0x8000, 0, 0, 1), be16(1, 0x8000, 0, 0x3fff, 1), be16(1, -4096, 0, 0x3fff, 1),
			be16(1, -4096, 0, 16380, 1000), be16(1, 0, 0, 0, 9), be16(2, -1, 0, 8, 5, 5000), be16(2, -1, 0, 3, 4999, 9999),
			be16(1, 1, 0, 0, 1), be16(1, 2, 0x4000, 0, 99), be16(1, -1, 0, 2, 50), be16(1, -1, 0, 5, 995),
		}
	}
	return nil
}

// TestDifferentialBinary compares ParseBinary with PostgreSQL receiving the
// same binary-format parameter into a column of each type: the binary
// forms of the corpus's values (read with the type without modifiers, so
// that the column's modifiers apply) and malformed inputs.
func TestDifferentialBinary(t *testing.T) {
	conn := connect(t)
	for i, d := range diffTypes() {
		tbl := fmt.Sprintf("b%d", i)
		exec(t, conn, fmt.Sprintf("CREATE TEMP TABLE %s (v %s)", tbl, d.sql))
		zone := "Europe/Berlin"
		exec(t, conn, "SET TimeZone = '"+zone+"'")
		loc, _ := time.LoadLocation(zone)
		env := Env{TimeZone: loc}
		ct := d.t.ComparisonType()
		inputs := malformedBinary(d.t.Base)
		for _, in := range d.corpus {
			if v, err := ct.ParseText([]byte(in), env); err == nil {
				inputs = append(inputs, ct.AppendBinary([]byte{}, v))
			}
		}
		t.Run(d.sql, func(t *testing.T) {
			for _, in := range inputs {
				rr := conn.ExecParams(context.Background(), "INSERT INTO "+tbl+" (v) VALUES ($1) RETURNING v, v",
					[][]byte{in}, []uint32{d.t.OID()}, []int16{1}, []int16{0, 1})
				srv := readResult(t, rr)
				if srv.err != nil && srv.err.Message == "incorrect binary data format in bind parameter 1" {
					srv.err.Message = "incorrect binary data format"
				}
				v, err := d.t.ParseBinary(in)
				var text, bin []byte
				if err == nil {
					if !d.t.Valid(v) {
						t.Errorf("%s %x: ParseBinary returned an invalid value %#v", d.sql, in, v)
					}
					text = d.t.AppendText(nil, v, env)
					bin = d.t.AppendBinary(nil, v)
				}
				if diff := compareOutcome(srv, text, bin, err); diff != "" {
					t.Errorf("%s %x: %s", d.sql, trunc(string(in)), diff)
				}
			}
		})
	}
}
