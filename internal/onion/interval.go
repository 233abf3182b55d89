package onion

import (
	"encoding/binary"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// An interval is stored as interval_send writes it: microseconds (int64),
// days (int32), months (int32). PostgreSQL compares intervals by their
// span, with a month as 30 days and a day as 24 hours (interval_cmp_value),
// so '1 day' equals '24:00:00': the equality key is the span, and the
// exact value is kept in the Val copy.

const codeIntervalFieldOverflow = "22015"

func intervalValue(us int64, days, months int32) Value {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(us))
	binary.BigEndian.PutUint32(b[8:], uint32(days))
	binary.BigEndian.PutUint32(b[12:], uint32(months))
	return BytesValue(b)
}

func intervalParts(s string) (us int64, days, months int32) {
	return int64(binary.BigEndian.Uint64([]byte(s[:8]))), int32(binary.BigEndian.Uint32([]byte(s[8:12]))), int32(binary.BigEndian.Uint32([]byte(s[12:16])))
}

// intervalSpan is interval_cmp_value: the span in microseconds.
func intervalSpan(s string) *big.Int {
	us, days, months := intervalParts(s)
	d := new(big.Int).Add(big.NewInt(int64(days)), new(big.Int).Mul(big.NewInt(int64(months)), big.NewInt(30)))
	d.Mul(d, big.NewInt(usecsPerDay))
	return d.Add(d, big.NewInt(us))
}

// intervalKey is the equality key: the span as 16 bytes.
func intervalKey(s string) []byte {
	span := intervalSpan(s)
	var b [16]byte
	span.FillBytes(b[:]) // magnitude
	if span.Sign() < 0 {
		// Two's complement of the magnitude.
		m := new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 128), span)
		m.FillBytes(b[:])
	}
	return b[:]
}

// intervalUnit is a unit of interval input (PostgreSQL's deltatktbl).
type intervalUnit int

const (
	uMicro intervalUnit = iota + 1
	uMilli
	uSecond
	uMinute
	uHour
	uDay
	uWeek
	uMonth
	uYear
	uDecade
	uCentury
	uMillennium
)

var intervalUnits = map[string]intervalUnit{
	"c": uCentury, "cent": uCentury, "centuries": uCentury, "century": uCentury,
	"d": uDay, "day": uDay, "days": uDay,
	"dec": uDecade, "decade": uDecade, "decades": uDecade, "decs": uDecade,
	"h": uHour, "hour": uHour, "hours": uHour, "hr": uHour, "hrs": uHour,
	"m": uMinute, "min": uMinute, "mins": uMinute, "minute": uMinute, "minutes": uMinute,
	"microsecon": uMicro, "us": uMicro, "usec": uMicro, "usecond": uMicro, "useconds": uMicro, "usecs": uMicro,
	"mil": uMillennium, "millennia": uMillennium, "millennium": uMillennium, "mils": uMillennium,
	"millisecon": uMilli, "ms": uMilli, "msec": uMilli, "msecond": uMilli, "mseconds": uMilli, "msecs": uMilli,
	"mon": uMonth, "mons": uMonth, "month": uMonth, "months": uMonth,
	"s": uSecond, "sec": uSecond, "second": uSecond, "seconds": uSecond, "secs": uSecond,
	"w": uWeek, "week": uWeek, "weeks": uWeek,
	"y": uYear, "year": uYear, "years": uYear, "yr": uYear, "yrs": uYear,
}

// intervalAcc accumulates interval input as DecodeInterval does (struct
// pg_itm_in), with its overflow checks.
type intervalAcc struct {
	usec         int64
	days, months int32
	bad          bool
}

func (a *intervalAcc) addUsec(v int64) {
	s, ok := addInt64(a.usec, v)
	a.usec, a.bad = s, a.bad || !ok
}

func (a *intervalAcc) addDays(v int64) {
	s := int64(a.days) + v
	if v > math.MaxInt32 || v < math.MinInt32 || s > math.MaxInt32 || s < math.MinInt32 {
		a.bad = true
		return
	}
	a.days = int32(s)
}

func (a *intervalAcc) addMonths(v int64) {
	s := int64(a.months) + v
	if v > math.MaxInt32 || v < math.MinInt32 || s > math.MaxInt32 || s < math.MinInt32 {
		a.bad = true
		return
	}
	a.months = int32(s)
}

// addMicros is AdjustMicroseconds: val units of scale µs, plus fval's.
func (a *intervalAcc) addMicros(val int64, fval float64, scale int64) {
	v, ok := mulInt64(val, scale)
	if !ok {
		a.bad = true
		return
	}
	a.addUsec(v)
	a.addFractMicros(fval, scale)
}

// addFractMicros is AdjustFractMicroseconds.
func (a *intervalAcc) addFractMicros(frac float64, scale int64) {
	if frac == 0 {
		return
	}
	f := math.RoundToEven(frac * float64(scale))
	if f >= 9.2e18 || f <= -9.2e18 {
		a.bad = true
		return
	}
	a.addUsec(int64(f))
}

// addFractDays is AdjustFractDays.
func (a *intervalAcc) addFractDays(frac float64, scale int64) {
	if frac == 0 {
		return
	}
	extra := math.Trunc(frac * float64(scale))
	if extra >= 2.2e9 || extra <= -2.2e9 {
		a.bad = true
		return
	}
	a.addDays(int64(extra))
	a.addFractMicros(frac*float64(scale)-extra, usecsPerDay)
}

func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0) || b == 0
}

func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	return p, p/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64)
}

// parseIntervalText is interval_in (IntervalStyle postgres input) for the
// forms this package implements: an optional "@", then numbers with
// units ("1 day", "-2.5 hours", "3 mons"; one bare number last is
// seconds), an optional signed hh:mm[:ss[.f]], and an optional final
// "ago". ISO 8601 ("P1D") and SQL-standard ("1-2", "1 2:03:04") forms
// are refused, not misread.
func parseIntervalText(s string) (Value, error) {
	bad := func() (Value, error) {
		return Value{}, pgErr(codeInvalidDatetimeFormat, "invalid input syntax for type interval: \"%s\"", s)
	}
	refused := func() (Value, error) {
		return Value{}, refuse(codeInvalidDatetimeFormat, "invalid input syntax for type interval: \"%s\"", s)
	}
	type token struct {
		text string
		kind byte // 'n' number, 't' time, 'w' word
	}
	var toks []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isSpace(c):
			i++
		case c == '@':
			toks = append(toks, token{"@", 'w'})
			i++
		case isAlpha(c):
			j := i
			for j < len(s) && isAlpha(s[j]) {
				j++
			}
			if j < len(s) && (isDigit(s[j]) || strings.IndexByte("+-/.", s[j]) >= 0) {
				// ParseDateTime would run it into a date or zone field.
				return refused()
			}
			toks = append(toks, token{strings.ToLower(s[i:j]), 'w'})
			i = j
		case isDigit(c) || c == '+' || c == '-' || c == '.':
			j := i + 1
			for j < len(s) && (isDigit(s[j]) || s[j] == '.' || s[j] == ':') {
				j++
			}
			kind := byte('n')
			if strings.Contains(s[i:j], ":") {
				kind = 't'
			}
			toks = append(toks, token{s[i:j], kind})
			i = j
		default:
			return refused()
		}
	}
	if len(toks) > 0 && toks[0].text == "@" && toks[0].kind == 'w' {
		toks = toks[1:]
	}
	ago := false
	if n := len(toks); n > 0 && toks[n-1].kind == 'w' && toks[n-1].text == "ago" {
		ago, toks = true, toks[:n-1]
	}
	if len(toks) == 0 {
		return bad()
	}
	var acc intervalAcc
	seen := map[intervalUnit]bool{}
	timeSeen := false
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.kind {
		case 't':
			if timeSeen || seen[uHour] || seen[uMinute] || seen[uSecond] || seen[uMilli] || seen[uMicro] {
				return refused()
			}
			timeSeen = true
			neg := t.text[0] == '-'
			txt := strings.TrimLeft(t.text, "+-")
			if len(txt) != len(t.text) && len(t.text)-len(txt) > 1 || txt == "" || !isDigit(txt[0]) {
				return refused()
			}
			var dt dtDecoder
			if _, e := dt.decodeTime(txt); e != dtOK {
				return refused()
			}
			us := ((int64(dt.hour)*60+int64(dt.min))*60+int64(dt.sec))*usecsPerSec + dt.fsec
			if neg {
				us = -us
			}
			acc.addUsec(us)
		case 'n':
			if i+1 < len(toks) && toks[i+1].kind == 't' {
				return refused() // SQL-standard day-time
			}
			unit := uSecond
			if i+1 < len(toks) {
				if toks[i+1].kind != 'w' {
					return refused()
				}
				w := toks[i+1].text
				if len(w) > 10 {
					w = w[:10] // TOKMAXLEN
				}
				u, ok := intervalUnits[w]
				if !ok {
					return refused()
				}
				unit = u
				i++
			}
			num := t.text
			neg := num[0] == '-'
			num = strings.TrimLeft(num, "+-")
			if len(t.text)-len(num) > 1 || strings.Count(num, ".") > 1 || strings.Trim(num, ".") == "" ||
				len(t.text) != len(num) && !isDigit(num[0]) {
				return refused()
			}
			intPart, fracPart, _ := strings.Cut(num, ".")
			// Seconds with a fraction count as milli- and microseconds
			// given too (DTK_ALL_SECS_M).
			claims := []intervalUnit{unit}
			if unit == uSecond && strings.Trim(fracPart, "0") != "" {
				claims = append(claims, uMilli, uMicro)
			}
			for _, u := range claims {
				if seen[u] || timeSeen && u <= uHour {
					return bad()
				}
				seen[u] = true
			}
			var val int64
			if intPart != "" {
				v, err := strconv.ParseInt(intPart, 10, 64)
				if err != nil {
					return Value{}, pgErr(codeIntervalFieldOverflow, "interval field value out of range: \"%s\"", s)
				}
				val = v
			}
			var fval float64
			if fracPart != "" {
				f, err := strconv.ParseFloat("0."+fracPart, 64)
				if err != nil {
					return refused()
				}
				fval = f
			}
			if neg {
				val, fval = -val, -fval
			}
			switch unit {
			case uMicro:
				acc.addMicros(val, fval, 1)
			case uMilli:
				acc.addMicros(val, fval, 1000)
			case uSecond:
				acc.addMicros(val, fval, usecsPerSec)
			case uMinute:
				acc.addMicros(val, fval, 60*usecsPerSec)
			case uHour:
				acc.addMicros(val, fval, 3600*usecsPerSec)
			case uDay:
				acc.addDays(val)
				acc.addFractMicros(fval, usecsPerDay)
			case uWeek:
				v, ok := mulInt64(val, 7)
				acc.bad = acc.bad || !ok
				acc.addDays(v)
				acc.addFractDays(fval, 7)
			case uMonth:
				acc.addMonths(val)
				acc.addFractDays(fval, 30)
			default:
				scale := map[intervalUnit]int64{uYear: 1, uDecade: 10, uCentury: 100, uMillennium: 1000}[unit]
				y, ok := mulInt64(val, scale*12)
				acc.bad = acc.bad || !ok
				acc.addMonths(y)
				acc.addMonths(int64(math.RoundToEven(fval * float64(scale) * 12)))
			}
		default:
			return refused()
		}
		if acc.bad {
			return Value{}, pgErr(codeIntervalFieldOverflow, "interval field value out of range: \"%s\"", s)
		}
	}
	if ago {
		if acc.usec == math.MinInt64 || acc.days == math.MinInt32 || acc.months == math.MinInt32 {
			return Value{}, pgErr(codeIntervalFieldOverflow, "interval field value out of range: \"%s\"", s)
		}
		acc.usec, acc.days, acc.months = -acc.usec, -acc.days, -acc.months
	}
	return intervalValue(acc.usec, acc.days, acc.months), nil
}

// IntervalFields splits an interval's microseconds and months as
// PostgreSQL's interval2tm does: years and months, hours, minutes,
// seconds and the microseconds left (each with the sign of its source).
func IntervalFields(us int64, months int32) (year, mon, hour, min, sec, fsec int64) {
	year, mon = int64(months)/12, int64(months)%12
	hour = us / (3600 * usecsPerSec)
	us -= hour * 3600 * usecsPerSec
	min = us / (60 * usecsPerSec)
	us -= min * 60 * usecsPerSec
	sec = us / usecsPerSec
	return year, mon, hour, min, sec, us - sec*usecsPerSec
}

// appendIntervalText is interval_out with IntervalStyle postgres.
func appendIntervalText(dst []byte, v string) []byte {
	us, days, months := intervalParts(v)
	year, mon, hour, min, sec, fsec := IntervalFields(us, months)
	isZero, isBefore := true, false
	part := func(value int64, unit string) {
		if value == 0 {
			return
		}
		if !isZero {
			dst = append(dst, ' ')
		}
		if isBefore && value > 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, value, 10)
		dst = append(append(dst, ' '), unit...)
		if value != 1 {
			dst = append(dst, 's')
		}
		isBefore, isZero = value < 0, false
	}
	part(year, "year")
	part(mon, "mon")
	part(int64(days), "day")
	if isZero || hour != 0 || min != 0 || sec != 0 || fsec != 0 {
		minus := hour < 0 || min < 0 || sec < 0 || fsec < 0
		if !isZero {
			dst = append(dst, ' ')
		}
		if minus {
			dst = append(dst, '-')
		} else if isBefore {
			dst = append(dst, '+')
		}
		dst = appendPad(dst, absInt64(hour), 2)
		dst = append(dst, ':')
		dst = appendPad(dst, absInt64(min), 2)
		dst = append(dst, ':')
		dst = appendPad(dst, absInt64(sec), 2)
		if fsec != 0 {
			f := appendPad(nil, absInt64(fsec), 6)
			for len(f) > 0 && f[len(f)-1] == '0' {
				f = f[:len(f)-1]
			}
			dst = append(append(dst, '.'), f...)
		}
	}
	return dst
}

func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// IntervalParts splits an interval value's bytes (as stored: Value.Bytes)
// into its microseconds, days and months.
func IntervalParts(b []byte) (us int64, days, months int32) { return intervalParts(string(b)) }

// IntervalOf is the interval value of microseconds, days and months.
func IntervalOf(us int64, days, months int32) Value { return intervalValue(us, days, months) }
