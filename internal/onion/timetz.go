package onion

import (
	"cmp"
	"encoding/binary"
	"time"
)

// A time with time zone is stored as timetz_send writes it: the time of
// day in microseconds (8 bytes), then the zone in seconds west of UTC (4
// bytes). PostgreSQL compares two by their instants (time plus zone),
// then by zone, so '12:00+01' < '11:00+00'... and equal ones have equal
// time and zone: the stored bytes are the equality key; the Ord onion
// encrypts (time + zone) * 2^17 + zone + tzLimit, which orders as
// timetz_cmp does.

// tzLimit bounds a zone: |zone| < 16 hours (TZDISP_LIMIT).
const tzLimit = 16 * 3600

func timetzValue(us int64, zone int32) Value {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 12), uint64(us))
	return BytesValue(binary.BigEndian.AppendUint32(b, uint32(zone)))
}

func timetzParts(v Value) (us int64, zone int32) {
	return int64(binary.BigEndian.Uint64([]byte(v.s[:8]))), int32(binary.BigEndian.Uint32([]byte(v.s[8:])))
}

// parseTimeTZText is timetz_in for parseTimeText's forms with a numeric
// offset or UTC; without a zone, the session's zone's offset on the
// current date at that time (DetermineTimeZoneOffset, as PostgreSQL
// does with the transaction's date).
func parseTimeTZText(s string, env Env) (Value, error) {
	us, tz, err := decodeTimeOnly(s, "time with time zone", true)
	if err != nil {
		return Value{}, err
	}
	if tz == noTZ {
		loc := env.location()
		y, m, d := time.Now().In(loc).Date()
		sec := us / usecsPerSec
		tz = determineTimeZoneOffset(loc, y, int(m), d, int(sec/3600), int(sec/60%60), int(sec%60))
	}
	return timetzValue(us, int32(tz)), nil
}

// parseTimeTZBinary is timetz_recv.
func parseTimeTZBinary(b []byte) (Value, error) {
	if err := binLen(b, 12); err != nil {
		return Value{}, err
	}
	v := BytesValue(b)
	us, zone := timetzParts(v)
	if !validTime(us) {
		return Value{}, pgErr(codeDatetimeFieldOverflow, "time out of range")
	}
	if zone <= -tzLimit || zone >= tzLimit {
		return Value{}, pgErr(codeInvalidTZDisplacement, "time zone displacement out of range")
	}
	return v, nil
}

// appendTimeTZText is timetz_out: the time, then the offset east.
func appendTimeTZText(dst []byte, v Value) []byte {
	us, zone := timetzParts(v)
	return appendOffset(appendTime(dst, us), -int(zone))
}

func validTimeTZ(v Value) bool {
	if v.kind != kindBytes || len(v.s) != 12 {
		return false
	}
	us, zone := timetzParts(v)
	return validTime(us) && zone > -tzLimit && zone < tzLimit
}

// timetzInstant is timetz_cmp_internal's first key.
func timetzInstant(v Value) int64 {
	us, zone := timetzParts(v)
	return us + int64(zone)*usecsPerSec
}

func compareTimeTZ(a, b Value) int {
	_, za := timetzParts(a)
	_, zb := timetzParts(b)
	return cmp.Or(cmp.Compare(timetzInstant(a), timetzInstant(b)), cmp.Compare(za, zb))
}

// timetzOrdinal orders as compareTimeTZ.
func timetzOrdinal(v Value) int64 {
	_, zone := timetzParts(v)
	return timetzInstant(v)<<17 + int64(zone) + tzLimit
}

// timetzFromOrdinal inverts timetzOrdinal.
func timetzFromOrdinal(x int64) Value {
	zone := x&(1<<17-1) - tzLimit
	instant := x >> 17
	return timetzValue(instant-zone*usecsPerSec, int32(zone))
}
