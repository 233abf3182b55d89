package onion

import (
	"math"
	"strconv"
	"time"
)

// Calendar constants (PostgreSQL's datatype/timestamp.h).
const (
	pgEpochJD   = 2451545 // Julian day of 2000-01-01
	unixEpochJD = 2440588 // Julian day of 1970-01-01
	usecsPerSec = 1000000
	usecsPerDay = 86400 * usecsPerSec
	secsPerDay  = 86400

	julianMinYear  = -4713
	julianMinMonth = 11
	julianMaxYear  = 5874898
	julianMaxMonth = 6

	dateEndJulian = 2147483494 // date2j(5874898, 1, 1)
	minTimestamp  = -211813488000000000
	endTimestamp  = 9223371331200000000
)

func validDate(d int64) bool { return d >= -pgEpochJD && d < dateEndJulian-pgEpochJD }

func validTimestamp(t int64) bool { return t >= minTimestamp && t < endTimestamp }

func validJulian(y, m int) bool {
	return (y > julianMinYear || (y == julianMinYear && m >= julianMinMonth)) &&
		(y < julianMaxYear || (y == julianMaxYear && m < julianMaxMonth))
}

// julianDay returns the Julian day number of a proleptic Gregorian date
// (year 0 is 1 BC). It counts days in 400-year eras of 146097 days, from
// 1 March so that the leap day ends each counted year.
func julianDay(y, m, d int) int64 {
	yy := int64(y)
	mm := int64(m)
	if mm <= 2 {
		yy--
		mm += 12
	}
	era := floorDiv(yy, 400)
	yoe := yy - era*400                    // [0, 399]
	doy := (153*(mm-3)+2)/5 + int64(d) - 1 // [0, 365]
	doe := yoe*365 + yoe/4 - yoe/100 + doy // [0, 146096]
	return era*146097 + doe + 1721120      // 1721120: Julian day of 0000-03-01
}

// civilDate inverts julianDay.
func civilDate(jd int64) (y, m, d int) {
	z := jd - 1721120
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	yy := yoe + era*400
	if m <= 2 {
		yy++
	}
	return int(yy), m, d
}

func isLeap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

var daysInMonth = [2][12]int{
	{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
	{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31},
}

// parseDateTime is date_in, timestamp_in and timestamptz_in.
func (t Type) parseDateTime(s string, env Env) (Value, error) {
	typ := "date"
	bufLen := 129 // date_in's work buffer: MAXDATELEN + 1
	switch t.Base {
	case Timestamp:
		typ, bufLen = "timestamp", 153 // MAXDATELEN + MAXDATEFIELDS
	case Timestamptz:
		typ, bufLen = "timestamp with time zone", 153
	}
	order, err := env.dateOrder()
	if err != nil {
		return Value{}, err
	}
	fields, derr := splitDateTime(s, bufLen)
	var dt dtDecoder
	if derr == dtOK {
		dt = dtDecoder{order: order, loc: env.location()}
		derr = dt.decode(fields)
	}
	if derr != dtOK {
		return Value{}, dateTimeError(derr, s, typ)
	}
	outOfRange := func() (Value, error) {
		if t.Base == Date {
			return Value{}, pgErr(codeDatetimeFieldOverflow, "date out of range: \"%s\"", s)
		}
		return Value{}, pgErr(codeDatetimeFieldOverflow, "timestamp out of range: \"%s\"", s)
	}
	switch dt.dtype {
	case dtLate:
		if t.Base == Date {
			return DateValue(math.MaxInt32), nil
		}
		return TimestampValue(math.MaxInt64), nil
	case dtEarly:
		if t.Base == Date {
			return DateValue(math.MinInt32), nil
		}
		return TimestampValue(math.MinInt64), nil
	case dtEpoch:
		if t.Base == Date {
			return DateValue(int32(unixEpochJD - pgEpochJD)), nil
		}
		return TimestampValue((unixEpochJD - pgEpochJD) * usecsPerDay), nil
	}
	if t.Base == Date {
		if !validJulian(dt.year, dt.mon) {
			return outOfRange()
		}
		d := julianDay(dt.year, dt.mon, dt.mday) - pgEpochJD
		if !validDate(d) {
			return outOfRange()
		}
		return DateValue(int32(d)), nil
	}
	// tm2timestamp
	if !validJulian(dt.year, dt.mon) {
		return outOfRange()
	}
	date := julianDay(dt.year, dt.mon, dt.mday) - pgEpochJD
	tod := ((int64(dt.hour)*60+int64(dt.min))*60+int64(dt.sec))*usecsPerSec + dt.fsec
	if date > math.MaxInt64/usecsPerDay-1 || date < math.MinInt64/usecsPerDay+1 {
		return outOfRange()
	}
	ts := date*usecsPerDay + tod
	if (ts < 0 && date > 0) || (ts > 0 && date < -1) {
		return outOfRange()
	}
	if t.Base == Timestamptz {
		ts += int64(dt.tz) * usecsPerSec // dt.tz is seconds west of UTC
	}
	if !validTimestamp(ts) {
		return outOfRange()
	}
	return TimestampValue(ts), nil
}

// Decoding errors (PostgreSQL's DTERR_*), and this package's refusals.
type dtErr int

const (
	dtOK dtErr = iota
	dtBadFormat
	dtFieldOverflow
	dtMDFieldOverflow
	dtTZDispOverflow
	dtRefuse     // a form PostgreSQL may accept that this package does not implement
	dtRefuseTime // now, today, tomorrow, yesterday
)

func dateTimeError(e dtErr, s, typ string) error {
	switch e {
	case dtFieldOverflow:
		return pgErr(codeDatetimeFieldOverflow, "date/time field value out of range: \"%s\"", s)
	case dtMDFieldOverflow:
		err := pgErr(codeDatetimeFieldOverflow, "date/time field value out of range: \"%s\"", s)
		err.Hint = "Perhaps you need a different \"datestyle\" setting."
		return err
	case dtTZDispOverflow:
		return pgErr(codeInvalidTZDisplacement, "time zone displacement out of range: \"%s\"", s)
	case dtRefuse:
		return refuse(codeInvalidDatetimeFormat, "invalid input syntax for type %s: \"%s\"", typ, s)
	case dtRefuseTime:
		return refuse(codeFeatureNotSupported, "the %s input \"%s\" depends on the current time and cannot be used for an encrypted column: give the value explicitly", typ, s)
	}
	return pgErr(codeInvalidDatetimeFormat, "invalid input syntax for type %s: \"%s\"", typ, s)
}

// Field types (PostgreSQL's DTK_* for ParseDateTime).
const (
	fNumber = iota
	fDate
	fTime
	fTZ
	fString
	fSpecial
)

type dtField struct {
	typ  int
	text string // lower-cased for words
}

const maxDateFields = 25

// coreWords are the words of PostgreSQL's built-in date/time keyword table
// (datetktbl): after such a word, a digit or '+' starts a new field; after
// any other word it continues a date or time zone name field.
var coreWords = map[string]bool{
	"-infinity": true, "ad": true, "allballs": true, "am": true, "apr": true, "april": true, "at": true,
	"aug": true, "august": true, "bc": true, "d": true, "dec": true, "december": true, "dow": true,
	"doy": true, "dst": true, "epoch": true, "feb": true, "february": true, "fri": true, "friday": true,
	"h": true, "infinity": true, "isodow": true, "isoyear": true, "j": true, "jan": true, "january": true,
	"jd": true, "jul": true, "julian": true, "july": true, "jun": true, "june": true, "m": true,
	"mar": true, "march": true, "may": true, "mm": true, "mon": true, "monday": true, "nov": true,
	"november": true, "now": true, "oct": true, "october": true, "on": true, "pm": true, "s": true,
	"sat": true, "saturday": true, "sep": true, "sept": true, "september": true, "sun": true,
	"sunday": true, "t": true, "thu": true, "thursday": true, "today": true, "tomorrow": true,
	"tue": true, "tuesday": true, "wed": true, "wednesday": true, "y": true, "yesterday": true,
}

// splitDateTime splits a date/time string into fields the way PostgreSQL's
// ParseDateTime does, including its work-buffer limit (bufLen bytes for the
// fields' characters and their terminators) and its limit of 25 fields.
func splitDateTime(s string, bufLen int) ([]dtField, dtErr) {
	var fields []dtField
	used := 0 // bytes of the work buffer in use
	i := 0
	for i < len(s) {
		c := s[i]
		if isSpace(c) {
			i++
			continue
		}
		if len(fields) >= maxDateFields {
			return nil, dtBadFormat
		}
		var buf []byte
		app := func(b byte) bool {
			if used+1 >= bufLen {
				return false
			}
			buf = append(buf, b)
			used++
			return true
		}
		var typ int
		switch {
		case isDigit(c):
			for i < len(s) && isDigit(s[i]) {
				if !app(s[i]) {
					return nil, dtBadFormat
				}
				i++
			}
			switch {
			case i < len(s) && s[i] == ':':
				typ = fTime
				for i < len(s) && (isDigit(s[i]) || s[i] == ':' || s[i] == '.') {
					if !app(s[i]) {
						return nil, dtBadFormat
					}
					i++
				}
			case i < len(s) && (s[i] == '-' || s[i] == '/' || s[i] == '.'):
				delim := s[i]
				if !app(s[i]) {
					return nil, dtBadFormat
				}
				i++
				if i < len(s) && isDigit(s[i]) {
					typ = fDate
					if delim == '.' {
						typ = fNumber
					}
					for i < len(s) && isDigit(s[i]) {
						if !app(s[i]) {
							return nil, dtBadFormat
						}
						i++
					}
					if i < len(s) && s[i] == delim {
						typ = fDate
						for i < len(s) && (isDigit(s[i]) || s[i] == delim) {
							if !app(s[i]) {
								return nil, dtBadFormat
							}
							i++
						}
					}
				} else {
					typ = fDate
					for i < len(s) && (isAlnum(s[i]) || s[i] == delim) {
						if !app(lower(s[i])) {
							return nil, dtBadFormat
						}
						i++
					}
				}
			default:
				typ = fNumber
			}
		case c == '.':
			typ = fNumber
			for ok := true; ok; ok = i < len(s) && isDigit(s[i]) {
				if !app(s[i]) {
					return nil, dtBadFormat
				}
				i++
			}
		case isAlpha(c):
			typ = fString
			for i < len(s) && isAlpha(s[i]) {
				if !app(lower(s[i])) {
					return nil, dtBadFormat
				}
				i++
			}
			isDate := false
			if i < len(s) {
				switch n := s[i]; {
				case n == '-' || n == '/' || n == '.':
					isDate = true
				case n == '+' || isDigit(n):
					isDate = !coreWords[string(buf)]
				}
			}
			if isDate {
				typ = fDate
				for ok := true; ok; ok = i < len(s) && (isAlnum(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '/' || s[i] == '_' || s[i] == '.' || s[i] == ':') {
					if !app(lower(s[i])) {
						return nil, dtBadFormat
					}
					i++
				}
			}
		case c == '+' || c == '-':
			if !app(c) {
				return nil, dtBadFormat
			}
			i++
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			switch {
			case i < len(s) && isDigit(s[i]):
				typ = fTZ
				for ok := true; ok; ok = i < len(s) && (isDigit(s[i]) || s[i] == ':' || s[i] == '.' || s[i] == '-') {
					if !app(s[i]) {
						return nil, dtBadFormat
					}
					i++
				}
			case i < len(s) && isAlpha(s[i]):
				typ = fSpecial
				for i < len(s) && isAlpha(s[i]) {
					if !app(lower(s[i])) {
						return nil, dtBadFormat
					}
					i++
				}
			default:
				return nil, dtBadFormat
			}
		case isPunct(c):
			i++
			continue
		default:
			return nil, dtBadFormat
		}
		used++ // the field's terminator
		fields = append(fields, dtField{typ: typ, text: string(buf)})
	}
	return fields, dtOK
}

// Field masks (PostgreSQL's DTK_M bits).
const (
	mYear = 1 << iota
	mMonth
	mDay
	mHour
	mMinute
	mSecond
	mMillisecond
	mMicrosecond
	mTZ
	mDOY
	mDOW
	mADBC
	mAMPM
	mReserv

	mDate = mYear | mMonth | mDay
	mTime = mHour | mMinute | mSecond | mMillisecond | mMicrosecond
)

// Result kinds of decoding.
const (
	dtDate = iota
	dtEpoch
	dtLate
	dtEarly
)

type dtDecoder struct {
	order int
	loc   *time.Location

	fmask                    int
	year, mon, mday, yday    int
	hour, min, sec           int
	fsec                     int64
	haveTextMonth, is2digits bool
	bc                       bool
	mer                      int // 0 = 24-hour clock, 1 = AM, 2 = PM
	tz                       int // seconds west of UTC (PostgreSQL's *tzp)
	dtype                    int
	isoTime                  bool // a "t" field was just seen
}

// keywords this package implements, with their meaning.
type kwKind int

const (
	kwMonth kwKind = iota + 1
	kwDOW
	kwADBC
	kwAMPM
	kwIgnore
	kwISOTime
	kwUTC // a time zone abbreviation of UTC
	kwEpoch
	kwLate
	kwEarly
	kwNow // now, today, tomorrow, yesterday: refused
)

type keyword struct {
	kind kwKind
	val  int
}

var keywords = map[string]keyword{
	"jan": {kwMonth, 1}, "january": {kwMonth, 1}, "feb": {kwMonth, 2}, "february": {kwMonth, 2},
	"mar": {kwMonth, 3}, "march": {kwMonth, 3}, "apr": {kwMonth, 4}, "april": {kwMonth, 4},
	"may": {kwMonth, 5}, "jun": {kwMonth, 6}, "june": {kwMonth, 6}, "jul": {kwMonth, 7},
	"july": {kwMonth, 7}, "aug": {kwMonth, 8}, "august": {kwMonth, 8}, "sep": {kwMonth, 9},
	"sept": {kwMonth, 9}, "september": {kwMonth, 9}, "oct": {kwMonth, 10}, "october": {kwMonth, 10},
	"nov": {kwMonth, 11}, "november": {kwMonth, 11}, "dec": {kwMonth, 12}, "december": {kwMonth, 12},
	"sun": {kwDOW, 0}, "sunday": {kwDOW, 0}, "mon": {kwDOW, 1}, "monday": {kwDOW, 1},
	"tue": {kwDOW, 2}, "tuesday": {kwDOW, 2}, "wed": {kwDOW, 3}, "wednesday": {kwDOW, 3},
	"thu": {kwDOW, 4}, "thursday": {kwDOW, 4}, "fri": {kwDOW, 5}, "friday": {kwDOW, 5},
	"sat": {kwDOW, 6}, "saturday": {kwDOW, 6},
	"ad": {kwADBC, 0}, "bc": {kwADBC, 1},
	"am": {kwAMPM, 1}, "pm": {kwAMPM, 2},
	"at": {kwIgnore, 0}, "on": {kwIgnore, 0},
	"t": {kwISOTime, 0},
	"z": {kwUTC, 0}, "zulu": {kwUTC, 0}, "utc": {kwUTC, 0}, "gmt": {kwUTC, 0}, "ut": {kwUTC, 0},
	"epoch": {kwEpoch, 0}, "infinity": {kwLate, 0}, "-infinity": {kwEarly, 0},
	"now": {kwNow, 0}, "today": {kwNow, 0}, "tomorrow": {kwNow, 0}, "yesterday": {kwNow, 0},
}

// strtoint reads the leading decimal digits of s as C's strtol (limited to
// int) does for a string that has no whitespace or sign: it returns 0 and
// consumes nothing when s does not start with a digit.
func strtoint(s string) (val int, rest string, overflow bool) {
	i := 0
	var v int64
	for i < len(s) && isDigit(s[i]) {
		if v <= math.MaxInt32 {
			v = v*10 + int64(s[i]-'0')
		}
		i++
	}
	if v > math.MaxInt32 {
		return 0, s[i:], true
	}
	return int(v), s[i:], false
}

// decode is PostgreSQL's DecodeDateTime for the fields this package
// implements; any other field refuses the input.
func (dt *dtDecoder) decode(fields []dtField) dtErr {
	dt.dtype = dtDate
	for i, f := range fields {
		tmask := 0
		switch f.typ {
		case fDate:
			if dt.isoTime || dt.fmask&(mMonth|mDay) == mMonth|mDay {
				// A time zone name or a run-together time with a zone.
				return dtRefuse
			}
			m, e := dt.decodeDate(f.text)
			if e != dtOK {
				return e
			}
			tmask = m
		case fTime:
			dt.isoTime = false
			m, e := dt.decodeTime(f.text)
			if e != dtOK {
				return e
			}
			tmask = m
			if timeOverflows(dt.hour, dt.min, dt.sec, dt.fsec) {
				return dtFieldOverflow
			}
		case fTZ:
			tz, e := decodeTimezone(f.text)
			if e != dtOK {
				return e
			}
			dt.tz = tz
			tmask = mTZ
		case fNumber:
			if dt.isoTime {
				// hhmmss after "t"
				dt.isoTime = false
				_, rest, ovf := strtoint(f.text)
				if ovf {
					return dtFieldOverflow
				}
				if rest != "" {
					return dtRefuse
				}
				m, e := dt.decodeNumberField(f.text, dt.fmask|mDate)
				if e != dtOK {
					return e
				}
				if m != mTime {
					return dtBadFormat
				}
				tmask = m
				break
			}
			for j := 0; j < len(f.text); j++ {
				if !isDigit(f.text[j]) {
					return dtRefuse // fractions and day-of-year forms with '.'
				}
			}
			flen := len(f.text)
			var m int
			var e dtErr
			if flen >= 6 && (dt.fmask&mDate == 0 || dt.fmask&mTime == 0) {
				m, e = dt.decodeNumberField(f.text, dt.fmask)
			} else {
				m, e = dt.decodeNumber(f.text, dt.fmask, dt.haveTextMonth)
			}
			if e != dtOK {
				return e
			}
			tmask = m
		case fString, fSpecial:
			kw, ok := keywords[f.text]
			if !ok {
				return dtRefuse
			}
			switch kw.kind {
			case kwIgnore:
				continue
			case kwNow:
				return dtRefuseTime
			case kwEpoch, kwLate, kwEarly:
				if len(fields) != 1 {
					return dtRefuse
				}
				switch kw.kind {
				case kwEpoch:
					dt.dtype = dtEpoch
				case kwLate:
					dt.dtype = dtLate
				default:
					dt.dtype = dtEarly
				}
				tmask = mReserv
			case kwMonth:
				tmask = mMonth
				if dt.fmask&mMonth != 0 && !dt.haveTextMonth && dt.fmask&mDay == 0 && dt.mon >= 1 && dt.mon <= 31 {
					dt.mday = dt.mon
					tmask = mDay
				}
				dt.haveTextMonth = true
				dt.mon = kw.val
			case kwUTC:
				dt.tz = 0
				tmask = mTZ
			case kwAMPM:
				dt.mer = kw.val
				tmask = mAMPM
			case kwADBC:
				dt.bc = kw.val == 1
				tmask = mADBC
			case kwDOW:
				tmask = mDOW
			case kwISOTime:
				if dt.fmask&mDate != mDate {
					return dtBadFormat
				}
				if i >= len(fields)-1 || (fields[i+1].typ != fNumber && fields[i+1].typ != fTime && fields[i+1].typ != fDate) {
					return dtBadFormat
				}
				dt.isoTime = true
			}
		default:
			return dtBadFormat
		}
		if tmask&dt.fmask != 0 {
			return dtBadFormat
		}
		dt.fmask |= tmask
	}
	if e := dt.validateDate(); e != dtOK {
		return e
	}
	if dt.mer != 0 && dt.hour > 12 {
		return dtFieldOverflow
	}
	if dt.mer == 1 && dt.hour == 12 {
		dt.hour = 0
	} else if dt.mer == 2 && dt.hour != 12 {
		dt.hour += 12
	}
	if dt.dtype == dtDate {
		if dt.fmask&mDate != mDate {
			return dtBadFormat
		}
		if dt.fmask&mTZ == 0 {
			dt.tz = determineTimeZoneOffset(dt.loc, dt.year, dt.mon, dt.mday, dt.hour, dt.min, dt.sec)
		}
	}
	return dtOK
}

// decodeDate is DecodeDate: a date field of digit or letter runs separated
// by punctuation, letter runs being month names.
func (dt *dtDecoder) decodeDate(s string) (int, dtErr) {
	var parts []string
	fmask := dt.fmask
	tmask := 0
	for i := 0; i < len(s); {
		for i < len(s) && !isAlnum(s[i]) {
			i++
		}
		if i >= len(s) {
			return 0, dtBadFormat
		}
		j := i
		if isDigit(s[i]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
		} else {
			for j < len(s) && isAlpha(s[j]) {
				j++
			}
		}
		parts = append(parts, s[i:j])
		if j < len(s) {
			j++ // the C code overwrites the character after a run
		}
		i = j
		if len(parts) >= maxDateFields {
			break
		}
	}
	haveTextMonth := false
	done := make([]bool, len(parts))
	for k, p := range parts {
		if !isAlpha(p[0]) {
			continue
		}
		kw, ok := keywords[p]
		if !ok {
			if coreWords[p] {
				return 0, dtBadFormat
			}
			return 0, dtRefuse
		}
		if kw.kind == kwIgnore {
			// Skipped here, then rejected as a number below.
			continue
		}
		if kw.kind != kwMonth {
			return 0, dtBadFormat
		}
		dt.mon = kw.val
		haveTextMonth = true
		if fmask&mMonth != 0 {
			return 0, dtBadFormat
		}
		fmask |= mMonth
		tmask |= mMonth
		done[k] = true
	}
	for k, p := range parts {
		if done[k] {
			continue
		}
		m, e := dt.decodeNumber(p, fmask, haveTextMonth)
		if e != dtOK {
			return 0, e
		}
		if fmask&m != 0 {
			return 0, dtBadFormat
		}
		fmask |= m
		tmask |= m
	}
	if fmask&^(mDOY|mTZ) != mDate {
		return 0, dtBadFormat
	}
	return tmask, dtOK
}

// decodeNumber is DecodeNumber for a string of digits.
func (dt *dtDecoder) decodeNumber(s string, fmask int, haveTextMonth bool) (int, dtErr) {
	val, rest, ovf := strtoint(s)
	if ovf {
		return 0, dtFieldOverflow
	}
	if len(rest) == len(s) || rest != "" {
		return 0, dtBadFormat
	}
	flen := len(s)
	if flen == 3 && fmask&mDate == mYear && val >= 1 && val <= 366 {
		dt.yday = val
		return mDOY | mMonth | mDay, dtOK
	}
	tmask := 0
	switch fmask & mDate {
	case 0:
		switch {
		case flen >= 3 || dt.order == orderYMD:
			tmask, dt.year = mYear, val
		case dt.order == orderDMY:
			tmask, dt.mday = mDay, val
		default:
			tmask, dt.mon = mMonth, val
		}
	case mYear:
		tmask, dt.mon = mMonth, val
	case mMonth:
		if haveTextMonth {
			if flen >= 3 || dt.order == orderYMD {
				tmask, dt.year = mYear, val
			} else {
				tmask, dt.mday = mDay, val
			}
		} else {
			tmask, dt.mday = mDay, val
		}
	case mYear | mMonth:
		if haveTextMonth {
			if flen >= 3 && dt.is2digits {
				tmask = mDay
				dt.mday = dt.year
				dt.year = val
				dt.is2digits = false
			} else {
				tmask, dt.mday = mDay, val
			}
		} else {
			tmask, dt.mday = mDay, val
		}
	case mDay:
		tmask, dt.mon = mMonth, val
	case mMonth | mDay:
		tmask, dt.year = mYear, val
	case mYear | mMonth | mDay:
		return dt.decodeNumberField(s, fmask)
	default:
		return 0, dtBadFormat
	}
	if tmask == mYear {
		dt.is2digits = flen <= 2
	}
	return tmask, dtOK
}

// decodeNumberField is DecodeNumberField for a string of digits: a
// run-together date (yymmdd, yyyymmdd, ...) or time (hhmmss, hhmm).
func (dt *dtDecoder) decodeNumberField(s string, fmask int) (int, dtErr) {
	n := len(s)
	if fmask&mDate != mDate && n >= 6 {
		if n-4 > 9 {
			return 0, dtRefuse // atoi would overflow in C
		}
		dt.mday, _ = strconv.Atoi(s[n-2:])
		dt.mon, _ = strconv.Atoi(s[n-4 : n-2])
		dt.year, _ = strconv.Atoi(s[:n-4])
		if n-4 == 2 {
			dt.is2digits = true
		}
		return mDate, dtOK
	}
	if fmask&mTime != mTime {
		switch n {
		case 6:
			dt.sec, _ = strconv.Atoi(s[4:])
			dt.min, _ = strconv.Atoi(s[2:4])
			dt.hour, _ = strconv.Atoi(s[:2])
			return mTime, dtOK
		case 4:
			dt.sec = 0
			dt.min, _ = strconv.Atoi(s[2:])
			dt.hour, _ = strconv.Atoi(s[:2])
			return mTime, dtOK
		}
	}
	return 0, dtBadFormat
}

// parseFraction is ParseFractionalSecond: s is "." followed by digits; the
// fraction is read as a double and rounded to microseconds with rint
// (half to even), as PostgreSQL does.
func parseFraction(s string) (int64, dtErr) {
	if s == "." {
		return 0, dtOK
	}
	if len(s) < 2 || s[0] != '.' {
		return 0, dtBadFormat
	}
	for i := 1; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, dtBadFormat
		}
	}
	f, err := strconv.ParseFloat("0"+s, 64)
	if err != nil {
		return 0, dtBadFormat
	}
	return int64(math.RoundToEven(f * 1000000)), dtOK
}

// decodeTime is DecodeTime: hh:mm, hh:mm:ss, hh:mm:ss.fff, or mm:ss.fff.
func (dt *dtDecoder) decodeTime(s string) (int, dtErr) {
	h, rest, ovf := strtoint(s)
	if ovf {
		return 0, dtFieldOverflow
	}
	if rest == "" || rest[0] != ':' {
		return 0, dtBadFormat
	}
	m, rest, ovf := strtoint(rest[1:])
	if ovf {
		return 0, dtFieldOverflow
	}
	sec := 0
	var fsec int64
	switch {
	case rest == "":
	case rest[0] == '.':
		f, e := parseFraction(rest)
		if e != dtOK {
			return 0, e
		}
		fsec = f
		sec, m, h = m, h, 0
	case rest[0] == ':':
		sec, rest, ovf = strtoint(rest[1:])
		if ovf {
			return 0, dtFieldOverflow
		}
		if rest != "" {
			if rest[0] != '.' {
				return 0, dtBadFormat
			}
			f, e := parseFraction(rest)
			if e != dtOK {
				return 0, e
			}
			fsec = f
		}
	default:
		return 0, dtBadFormat
	}
	dt.hour, dt.min, dt.sec, dt.fsec = h, m, sec, fsec
	if h < 0 || m < 0 || m > 59 || sec < 0 || sec > 60 || fsec < 0 || fsec > usecsPerSec {
		return 0, dtFieldOverflow
	}
	return mTime, dtOK
}

// timeOverflows is time_overflows: each field in range (24:00:00 and leap
// second 60 allowed) and the total at most 24 hours.
func timeOverflows(h, m, s int, fsec int64) bool {
	if h < 0 || h > 24 || m < 0 || m >= 60 || s < 0 || s > 60 || fsec < 0 || fsec > usecsPerSec {
		return true
	}
	return ((int64(h)*60+int64(m))*60+int64(s))*usecsPerSec+fsec > usecsPerDay
}

// decodeTimezone is DecodeTimezone: +h, +hh, +hhmm, +hh:mm, +hh:mm:ss. It
// returns seconds west of UTC.
func decodeTimezone(s string) (int, dtErr) {
	if s == "" || (s[0] != '+' && s[0] != '-') {
		return 0, dtBadFormat
	}
	hr, rest, ovf := strtoint(s[1:])
	if ovf {
		return 0, dtTZDispOverflow
	}
	min, sec := 0, 0
	switch {
	case rest != "" && rest[0] == ':':
		min, rest, ovf = strtoint(rest[1:])
		if ovf {
			return 0, dtTZDispOverflow
		}
		if rest != "" && rest[0] == ':' {
			sec, rest, ovf = strtoint(rest[1:])
			if ovf {
				return 0, dtTZDispOverflow
			}
		}
	case rest == "" && len(s) > 3:
		min = hr % 100
		hr /= 100
	}
	if hr < 0 || hr > 15 || min < 0 || min >= 60 || sec < 0 || sec >= 60 {
		return 0, dtTZDispOverflow
	}
	tz := (hr*60+min)*60 + sec
	if s[0] == '-' {
		tz = -tz
	}
	if rest != "" {
		return 0, dtBadFormat
	}
	return -tz, dtOK
}

// validateDate is ValidateDate: BC and two-digit years, day of year, and
// the ranges of month and day.
func (dt *dtDecoder) validateDate() dtErr {
	if dt.fmask&mYear != 0 {
		switch {
		case dt.bc:
			if dt.year <= 0 {
				return dtFieldOverflow
			}
			dt.year = -(dt.year - 1)
		case dt.is2digits:
			if dt.year < 0 {
				return dtFieldOverflow
			}
			if dt.year < 70 {
				dt.year += 2000
			} else if dt.year < 100 {
				dt.year += 1900
			}
		default:
			if dt.year <= 0 {
				return dtFieldOverflow
			}
		}
	}
	if dt.fmask&mDOY != 0 {
		if !validJulian(dt.year, 1) {
			// PostgreSQL's day arithmetic overflows for such years.
			return dtRefuse
		}
		dt.year, dt.mon, dt.mday = civilDate(julianDay(dt.year, 1, 1) + int64(dt.yday) - 1)
	}
	if dt.fmask&mMonth != 0 && (dt.mon < 1 || dt.mon > 12) {
		return dtMDFieldOverflow
	}
	if dt.fmask&mDay != 0 && (dt.mday < 1 || dt.mday > 31) {
		return dtMDFieldOverflow
	}
	if dt.fmask&mDate == mDate {
		leap := 0
		if isLeap(dt.year) {
			leap = 1
		}
		if dt.mday > daysInMonth[leap][dt.mon-1] {
			return dtFieldOverflow
		}
	}
	return dtOK
}

// determineTimeZoneOffset is DetermineTimeZoneOffset: the offset (seconds
// west of UTC) of a local time in loc. A local time that does not exist
// (in a spring-forward gap) is read with the offset before the transition,
// an ambiguous one (in a fall-back overlap) with the offset after it.
func determineTimeZoneOffset(loc *time.Location, y, mon, d, h, min, s int) int {
	if !validJulian(y, mon) {
		return 0
	}
	day := (julianDay(y, mon, d) - unixEpochJD) * secsPerDay
	local := day + int64(s) + (int64(min)+int64(h)*60)*60
	prev := local - secsPerDay
	pt := time.Unix(prev, 0).In(loc)
	_, beforeOff := pt.Zone()
	_, end := pt.ZoneBounds()
	if end.IsZero() {
		return -beforeOff
	}
	boundary := end.Unix()
	_, afterOff := end.In(loc).Zone()
	beforeTime := local - int64(beforeOff)
	afterTime := local - int64(afterOff)
	if beforeTime < boundary && afterTime < boundary {
		return -beforeOff
	}
	if beforeTime >= boundary && afterTime >= boundary {
		return -afterOff
	}
	if beforeTime > afterTime {
		return -beforeOff
	}
	return -afterOff
}

// appendDate is date_out with DateStyle ISO.
func appendDate(dst []byte, d int64) []byte {
	switch d {
	case math.MinInt32:
		return append(dst, "-infinity"...)
	case math.MaxInt32:
		return append(dst, "infinity"...)
	}
	y, m, dd := civilDate(d + pgEpochJD)
	dst = appendYMD(dst, y, m, dd)
	if y <= 0 {
		dst = append(dst, " BC"...)
	}
	return dst
}

func appendYMD(dst []byte, y, m, d int) []byte {
	if y <= 0 {
		y = -(y - 1)
	}
	dst = appendPad(dst, int64(y), 4)
	dst = append(dst, '-')
	dst = appendPad(dst, int64(m), 2)
	dst = append(dst, '-')
	return appendPad(dst, int64(d), 2)
}

func appendPad(dst []byte, v int64, width int) []byte {
	s := strconv.FormatInt(v, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// appendTimestamp is timestamp_out (loc nil) and timestamptz_out with
// DateStyle ISO.
func appendTimestamp(dst []byte, ts int64, loc *time.Location) []byte {
	switch ts {
	case math.MinInt64:
		return append(dst, "-infinity"...)
	case math.MaxInt64:
		return append(dst, "infinity"...)
	}
	off := 0
	if loc != nil {
		sec := floorDiv(ts, usecsPerSec) + (pgEpochJD-unixEpochJD)*secsPerDay
		_, off = time.Unix(sec, 0).In(loc).Zone()
		ts += int64(off) * usecsPerSec
	}
	date := floorDiv(ts, usecsPerDay)
	tod := ts - date*usecsPerDay
	y, m, d := civilDate(date + pgEpochJD)
	dst = appendYMD(dst, y, m, d)
	dst = append(dst, ' ')
	secs := tod / usecsPerSec
	frac := tod % usecsPerSec
	dst = appendPad(dst, secs/3600, 2)
	dst = append(dst, ':')
	dst = appendPad(dst, secs/60%60, 2)
	dst = append(dst, ':')
	dst = appendPad(dst, secs%60, 2)
	if frac != 0 {
		f := []byte(strconv.FormatInt(frac+usecsPerSec, 10)[1:])
		for len(f) > 0 && f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		dst = append(dst, '.')
		dst = append(dst, f...)
	}
	if loc != nil {
		dst = appendOffset(dst, off)
	}
	if y <= 0 {
		dst = append(dst, " BC"...)
	}
	return dst
}

// appendOffset is EncodeTimezone for the ISO style: +hh, +hh:mm or
// +hh:mm:ss (seconds east of UTC).
func appendOffset(dst []byte, east int) []byte {
	if east >= 0 {
		dst = append(dst, '+')
	} else {
		dst = append(dst, '-')
		east = -east
	}
	h, m, s := east/3600, east/60%60, east%60
	dst = appendPad(dst, int64(h), 2)
	if m != 0 || s != 0 {
		dst = append(dst, ':')
		dst = appendPad(dst, int64(m), 2)
	}
	if s != 0 {
		dst = append(dst, ':')
		dst = appendPad(dst, int64(s), 2)
	}
	return dst
}

// parseTimeText is time_in for the forms this package implements: a time
// field (hh:mm, hh:mm:ss, hh:mm:ss.fff, mm:ss.fff), an optional AM or PM,
// or "allballs" (midnight); a time zone of UTC is ignored, as time_in
// ignores zones. Other forms PostgreSQL accepts (with a date, another
// zone, run-together digits) are refused, not misread.
func parseTimeText(s string) (Value, error) {
	us, _, err := decodeTimeOnly(s, "time", false)
	if err != nil {
		return Value{}, err
	}
	return IntValue(us), nil
}

// decodeTimeOnly is DecodeTimeOnly for parseTimeText and, with withTZ,
// timetz_in: a numeric offset (+hh[:mm[:ss]]) or UTC's names are read
// too; tz is the offset in seconds west of UTC, noTZ when none was given.
func decodeTimeOnly(s, typ string, withTZ bool) (us int64, tz int, err error) {
	fields, derr := splitDateTime(s, 153) // MAXDATELEN + MAXDATEFIELDS
	var dt dtDecoder
	seen := 0
	for _, f := range fields {
		if derr != dtOK {
			break
		}
		tmask := 0
		switch f.typ {
		case fTime:
			tmask, derr = dt.decodeTime(f.text)
		case fTZ:
			if !withTZ {
				derr = dtRefuse
				break
			}
			dt.tz, derr = decodeTimezone(f.text)
			tmask = mTZ
		case fString, fSpecial:
			if f.text == "allballs" {
				dt.hour, dt.min, dt.sec, dt.fsec = 0, 0, 0, 0
				tmask = mTime | mTZ
				break
			}
			switch kw, ok := keywords[f.text]; {
			case !ok:
				derr = dtRefuse
			case kw.kind == kwIgnore:
				continue
			case kw.kind == kwNow:
				derr = dtRefuseTime
			case kw.kind == kwAMPM:
				dt.mer, tmask = kw.val, mAMPM
			case kw.kind == kwUTC:
				tmask = mTZ
			default:
				derr = dtRefuse
			}
		default:
			derr = dtRefuse
		}
		if derr == dtOK && tmask&seen != 0 {
			derr = dtBadFormat
		}
		seen |= tmask
	}
	if derr == dtOK && seen&mTime == 0 {
		derr = dtBadFormat
	}
	if derr == dtOK && dt.mer != 0 {
		switch {
		case dt.hour > 12:
			derr = dtFieldOverflow
		case dt.mer == 1 && dt.hour == 12:
			dt.hour = 0
		case dt.mer == 2 && dt.hour != 12:
			dt.hour += 12
		}
	}
	if derr == dtOK && timeOverflows(dt.hour, dt.min, dt.sec, dt.fsec) {
		derr = dtFieldOverflow // checked last, as DecodeTimeOnly does
	}
	if derr != dtOK {
		return 0, 0, dateTimeError(derr, s, typ)
	}
	if withTZ && seen&mTZ == 0 {
		tz = noTZ
	} else {
		tz = dt.tz
	}
	return ((int64(dt.hour)*60+int64(dt.min))*60+int64(dt.sec))*usecsPerSec + dt.fsec, tz, nil
}

// noTZ is decodeTimeOnly's zone when the input gives none.
const noTZ = math.MinInt32

// validTime reports whether us is a time of day: 00:00:00 to 24:00:00.
func validTime(us int64) bool { return us >= 0 && us <= usecsPerDay }

// appendTime is time_out: hh:mm:ss, then the fraction of a second without
// trailing zeros.
func appendTime(dst []byte, us int64) []byte {
	h, rem := us/(3600*usecsPerSec), us%(3600*usecsPerSec)
	m, rem := rem/(60*usecsPerSec), rem%(60*usecsPerSec)
	sec, frac := rem/usecsPerSec, rem%usecsPerSec
	dst = appendPad(dst, h, 2)
	dst = append(dst, ':')
	dst = appendPad(dst, m, 2)
	dst = append(dst, ':')
	dst = appendPad(dst, sec, 2)
	if frac != 0 {
		f := appendPad(nil, frac, 6)
		for len(f) > 0 && f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		dst = append(append(dst, '.'), f...)
	}
	return dst
}

// ValidTimestamp reports whether microseconds t (since 2000-01-01) are in
// the range of timestamp and timestamptz (IS_VALID_TIMESTAMP).
func ValidTimestamp(t int64) bool { return validTimestamp(t) }
