package exec

import (
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgnumeric"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// The date and time functions of the scalar library (scalar.go):
// extract/date_part of a date, timestamp or timestamptz, date_trunc, and
// AT TIME ZONE (timezone). A timestamptz is read in the session's
// TimeZone, as PostgreSQL reads it; a time zone named in the query must
// be one of the tz database (or UTC).

const (
	usPerSec = 1_000_000
	usPerDay = 86_400 * usPerSec
	// unixEpochDays is 1970-01-01 in days since 2000-01-01.
	unixEpochDays = -10957
)

// timeFields is a wall-clock time split up.
type timeFields struct {
	y, m, d int   // proleptic Gregorian, year 0 is 1 BC
	days    int64 // since 2000-01-01
	tod     int64 // microseconds since midnight
}

func splitLocal(local int64) timeFields {
	days := floorDivInt(local, usPerDay)
	y, m, d := onion.CivilDate(days)
	return timeFields{y: y, m: m, d: d, days: days, tod: local - days*usPerDay}
}

func floorDivInt(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// timestampEndDays is the first date (days since 2000-01-01) a timestamp
// cannot hold: 294277-01-01.
const timestampEndDays = 109203528 - 2451545

// dateToTimestamp casts a date to a timestamp (midnight) or a
// timestamptz (midnight in the session's time zone); the infinities stay
// infinite.
func dateToTimestamp(a Value, to onion.Type, env onion.Env) (Value, error) {
	v, overflow := dateToTimestampOverflow(a, to, env)
	if overflow != 0 {
		return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "22008", Message: "date out of range for timestamp"}
	}
	return v, nil
}

// dateToTimestampOverflow is dateToTimestamp for a comparison, as
// date2timestamp[tz]_opt_overflow: a finite date past the timestamp
// range (overflow 1, or -1 before it) is a value between every finite
// timestamp and the infinity on its side.
func dateToTimestampOverflow(a Value, to onion.Type, env onion.Env) (v Value, overflow int) {
	switch a.Int {
	case math.MinInt32:
		return Value{Type: to, Int: math.MinInt64}, 0
	case math.MaxInt32:
		return Value{Type: to, Int: math.MaxInt64}, 0
	}
	if a.Int >= timestampEndDays {
		return Value{Type: to, Int: math.MaxInt64 - 1}, 1
	}
	us := onion.FromLocalTime(a.Int*usPerDay, zoneOf(to, env))
	switch {
	case us < timestampMinUs:
		return Value{Type: to, Int: math.MinInt64 + 1}, -1
	case us >= timestampEndUs:
		return Value{Type: to, Int: math.MaxInt64 - 1}, 1
	}
	return Value{Type: to, Int: us}, 0
}

// The timestamp range (PostgreSQL's MIN_TIMESTAMP, END_TIMESTAMP): from
// 4714-11-24 BC 00:00 to before 294277-01-01 00:00, in microseconds
// since 2000-01-01.
const (
	timestampMinUs = -211813488000000000
	timestampEndUs = 9223371331200000000
)

// timestampToDate casts a timestamp or timestamptz (in the session's
// time zone) to its date.
func timestampToDate(a Value, env onion.Env) Value {
	switch a.Int {
	case math.MinInt64:
		return Value{Type: TypeDate, Int: math.MinInt32}
	case math.MaxInt64:
		return Value{Type: TypeDate, Int: math.MaxInt32}
	}
	local, _ := onion.LocalTime(a.Int, zoneOf(a.Type, env))
	return Value{Type: TypeDate, Int: floorDivInt(local, usPerDay)}
}

// zoneOf is the session's time zone for a timestamptz, nil for a
// timestamp (read as it is).
func zoneOf(t onion.Type, env onion.Env) *time.Location {
	if t.Base == onion.Timestamptz {
		return env.TimeZone
	}
	return nil
}

// numericScaled is the numeric coef·10^-scale.
func numericScaled(coef int64, scale int) (Value, error) {
	d, err := pgnumeric.FromCoefficient(coef < 0, new(big.Int).Abs(big.NewInt(coef)).String(), scale)
	return Value{Type: TypeNumeric, Num: d}, err
}

// isoWeek is the ISO 8601 week-numbering year and week of a date.
func isoWeek(days int64) (year, week int) {
	t := time.Unix((days-unixEpochDays)*86400, 0).UTC()
	return t.ISOWeek()
}

// extractTime is extract(field FROM x) of a date, timestamp or
// timestamptz (numeric, as in PostgreSQL 14 and later).
func extractTime(field string, a Value, env onion.Env) (Value, error) {
	field = strings.ToLower(field)
	if a.Type.Base == onion.Time {
		return extractTimeOfDay(field, a.Int)
	}
	isDate := a.Type.Base == onion.Date
	var local int64
	east := 0
	switch {
	case isDate && (a.Int == math.MinInt32 || a.Int == math.MaxInt32),
		!isDate && (a.Int == math.MinInt64 || a.Int == math.MaxInt64):
		// ±infinity: infinite for the fields that only grow, else NULL.
		sign := 1
		if a.Int < 0 {
			sign = -1
		}
		switch field {
		case "epoch", "year", "isoyear", "decade", "century", "millennium":
			return Value{Type: TypeNumeric, Num: pgnumeric.Inf(sign)}, nil
		case "day", "month", "quarter", "week", "dow", "isodow", "doy", "hour", "minute", "second", "milliseconds", "microseconds",
			"timezone", "timezone_hour", "timezone_minute":
			if !isDate && a.Type.Base == onion.Timestamp && strings.HasPrefix(field, "timezone") {
				return Value{}, rewrite.Refusal("extract(%s ...) of %s is not supported in a query the proxy computes", field, a.Type)
			}
			if isDate && timeOfDayField(field) {
				return Value{}, rewrite.Refusal("extract(%s from date) is not supported in a query the proxy computes", field)
			}
			return NullOf(TypeNumeric), nil
		}
		return Value{}, rewrite.Refusal("extract(%s ...) is not supported in a query the proxy computes", field)
	case !isDate:
		local, east = onion.LocalTime(a.Int, zoneOf(a.Type, env))
	}
	if isDate && timeOfDayField(field) {
		return Value{}, rewrite.Refusal("extract(%s from date) is not supported in a query the proxy computes", field)
	}
	var f timeFields
	if isDate {
		// From the day itself: in microseconds, dates past 294276 AD
		// overflow (extract(year FROM '5874897-12-31') was 29357).
		y, m, d := onion.CivilDate(a.Int)
		f = timeFields{y: y, m: m, d: d, days: a.Int}
	} else {
		f = splitLocal(local)
	}
	year := f.y
	if year <= 0 {
		year-- // 1 BC is -1: there is no year 0
	}
	if v, ok, err := secondsField(field, f.tod%(60*usPerSec)); ok {
		return v, err
	}
	var v int64
	switch field {
	case "minute":
		v = f.tod / (60 * usPerSec) % 60
	case "hour":
		v = f.tod / (3600 * usPerSec)
	case "day":
		v = int64(f.d)
	case "month":
		v = int64(f.m)
	case "quarter":
		v = int64((f.m-1)/3 + 1)
	case "year":
		v = int64(year)
	case "week":
		_, w := isoWeek(f.days)
		v = int64(w)
	case "isoyear":
		y, _ := isoWeek(f.days)
		if y <= 0 {
			y--
		}
		v = int64(y)
	case "dow", "isodow":
		v = (f.days + 6) % 7 // 2000-01-01 was a Saturday
		if v < 0 {
			v += 7
		}
		if field == "isodow" && v == 0 {
			v = 7
		}
	case "doy":
		v = f.days - onion.DaysOf(f.y, 1, 1) + 1
	case "decade":
		if f.y >= 0 {
			v = int64(f.y / 10)
		} else {
			v = -int64((8 - (f.y - 1)) / 10)
		}
	case "century":
		if f.y > 0 {
			v = int64((f.y + 99) / 100)
		} else {
			v = -int64((99 - (f.y - 1)) / 100)
		}
	case "millennium":
		if f.y > 0 {
			v = int64((f.y + 999) / 1000)
		} else {
			v = -int64((999 - (f.y - 1)) / 1000)
		}
	case "epoch":
		if isDate {
			v = (a.Int - unixEpochDays) * 86400
			break
		}
		instant := a.Int // a timestamptz's epoch is the instant's
		if a.Type.Base == onion.Timestamp {
			instant = local
		}
		return numericScaled(instant-unixEpochDays*usPerDay, 6)
	case "timezone", "timezone_hour", "timezone_minute":
		if a.Type.Base != onion.Timestamptz {
			return Value{}, rewrite.Refusal("extract(%s ...) of %s is not supported in a query the proxy computes", field, a.Type)
		}
		switch field {
		case "timezone":
			v = int64(east)
		case "timezone_hour":
			v = int64(east / 3600)
		default:
			v = int64(east / 60 % 60)
		}
	default:
		return Value{}, unitRefusal("extract(%s ...) is not supported in a query the proxy computes", field, a.Type)
	}
	return Value{Type: TypeNumeric, Num: decimalFromInt(v)}, nil
}

// unitRefusal refuses a unit of date_trunc or extract the proxy does not
// compute, or fails as PostgreSQL does (22023) for one that cannot be
// any of PostgreSQL's units (only letters and _ are in their names): a
// unit from a parameter the client did not check, say.
func unitRefusal(format, field string, t onion.Type) error {
	lower := strings.ToLower(field) // already lower-cased: ASCII only
	if strings.IndexFunc(lower, func(r rune) bool { return (r < 'a' || r > 'z') && r != '_' }) < 0 && lower != "" {
		return rewrite.Refusal(format, field)
	}
	if len(lower) > 63 {
		lower = lower[:63] // NAMEDATALEN - 1, as downcase_truncate_identifier
		for !utf8.ValidString(lower) {
			lower = lower[:len(lower)-1]
		}
	}
	return &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: fmt.Sprintf("unit \"%s\" not recognized for type %s", lower, t.BaseName())}
}

// secondsField is extract's microseconds, milliseconds or second field
// from usec, the seconds and microseconds of a minute (ok false for
// other fields).
func secondsField(field string, usec int64) (v Value, ok bool, err error) {
	switch field {
	case "microseconds":
		return Value{Type: TypeNumeric, Num: decimalFromInt(usec)}, true, nil
	case "milliseconds":
		v, err = numericScaled(usec, 3)
		return v, true, err
	case "second":
		v, err = numericScaled(usec, 6)
		return v, true, err
	}
	return Value{}, false, nil
}

func timeOfDayField(field string) bool {
	switch field {
	case "hour", "minute", "second", "milliseconds", "microseconds", "timezone", "timezone_hour", "timezone_minute":
		return true
	}
	return false
}

// dateTrunc is date_trunc(field, x) of a timestamp or timestamptz (in
// the session's time zone: for a day or more the offset of the truncated
// time is looked up again, as timestamptz_trunc does).
func dateTrunc(field string, a Value, env onion.Env) (Value, error) {
	field = strings.ToLower(field)
	if a.Int == math.MinInt64 || a.Int == math.MaxInt64 {
		return a, nil
	}
	loc := zoneOf(a.Type, env)
	local, east := onion.LocalTime(a.Int, loc)
	f := splitLocal(local)
	var out int64
	redoZone := true
	switch field {
	case "microseconds":
		out, redoZone = local, false
	case "milliseconds":
		out, redoZone = local-floorMod(local, 1000), false
	case "second":
		out, redoZone = local-floorMod(local, usPerSec), false
	case "minute":
		out, redoZone = local-floorMod(local, 60*usPerSec), false
	case "hour":
		out, redoZone = local-floorMod(local, 3600*usPerSec), false
	case "day":
		out = f.days * usPerDay
	case "week":
		dow := (f.days + 5) % 7 // days since Monday (2000-01-03 was one)
		if dow < 0 {
			dow += 7
		}
		out = (f.days - dow) * usPerDay
	case "month":
		out = onion.DaysOf(f.y, f.m, 1) * usPerDay
	case "quarter":
		out = onion.DaysOf(f.y, 3*((f.m-1)/3)+1, 1) * usPerDay
	case "year":
		out = onion.DaysOf(f.y, 1, 1) * usPerDay
	default:
		return Value{}, unitRefusal("date_trunc('%s', ...) is not supported in a query the proxy computes", field, a.Type)
	}
	switch {
	case loc == nil:
	case redoZone:
		out = onion.FromLocalTime(out, loc)
	default:
		out -= int64(east) * usPerSec
	}
	return Value{Type: a.Type, Int: out}, nil
}

func floorMod(a, b int64) int64 { return a - floorDivInt(a, b)*b }

// atTimeZone is x AT TIME ZONE zone (timezone(zone, x)): the wall-clock
// time in zone of a timestamptz, or the instant of a timestamp read as a
// wall-clock time in zone.
func atTimeZone(zone string, a Value) (Value, error) {
	loc, err := namedZone(zone)
	if err != nil {
		return Value{}, err
	}
	if a.Int == math.MinInt64 || a.Int == math.MaxInt64 {
		a.Type = flipZone(a.Type)
		return a, nil
	}
	if a.Type.Base == onion.Timestamptz {
		local, _ := onion.LocalTime(a.Int, loc)
		return Value{Type: onion.Type{Base: onion.Timestamp}, Int: local}, nil
	}
	return Value{Type: onion.Type{Base: onion.Timestamptz}, Int: onion.FromLocalTime(a.Int, loc)}, nil
}

func flipZone(t onion.Type) onion.Type {
	if t.Base == onion.Timestamptz {
		return onion.Type{Base: onion.Timestamp}
	}
	return onion.Type{Base: onion.Timestamptz}
}

// tzName is a name of the tz database: an area and a location
// (America/Port-au-Prince, Etc/GMT+10), never an abbreviation or a POSIX
// specification.
var tzName = regexp.MustCompile(`^[A-Za-z][A-Za-z_]*(/[A-Za-z0-9_+-]+)+$`)

// posixOffset is a POSIX time zone without daylight saving time: an
// abbreviation (which PostgreSQL, unlike IANA, may leave empty) and an
// offset west of Greenwich, hours up to 167.
var posixOffset = regexp.MustCompile(`^(?:[A-Za-z]{3,}|<[A-Za-z0-9+-]{3,}>)?([+-]?)([0-9]{1,3})(?::([0-9]{1,2})(?::([0-9]{1,2}))?)?$`)

// namedZone loads a time zone as PostgreSQL's pg_tzset reads one: a name
// of the tz database (by its exact name), or a POSIX specification of a
// fixed offset ('+10:00' is ten hours west, 'UTC-05:00' five hours
// east). Abbreviations and POSIX rules with daylight saving time, which
// PostgreSQL reads by its own tables, are refused.
func namedZone(name string) (*time.Location, error) {
	if name == "UTC" {
		return time.UTC, nil
	}
	if m := posixOffset.FindStringSubmatch(name); m != nil {
		h, _ := strconv.Atoi(m[2])
		mins, _ := strconv.Atoi(m[3]) // "" is 0
		secs, _ := strconv.Atoi(m[4])
		if h <= 167 && mins <= 59 && secs <= 60 {
			west := h*3600 + mins*60 + secs
			if m[1] == "-" {
				west = -west
			}
			return time.FixedZone(name, -west), nil
		}
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: fmt.Sprintf("time zone \"%s\" not recognized", name)}
	}
	if !tzName.MatchString(name) {
		return nil, rewrite.Refusal("time zone %q is not supported in a query the proxy computes: only names of the tz database (Europe/Paris), fixed POSIX offsets and UTC", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, rewrite.Refusal("time zone %q is not supported in a query the proxy computes: %v", name, err)
	}
	return loc, nil
}

// timeSig types extract, date_part and date_trunc: a constant field and a
// date (extract only), timestamp or timestamptz.
func timeSig(name string, result func(arg onion.Type) onion.Type, dates bool) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != 2 || args[0] != tUnknown {
			return nil, TypeNumeric, refuseArgs(name, args)
		}
		switch args[1].Base {
		case onion.Timestamp, onion.Timestamptz:
		case onion.Date, onion.Time, onion.Interval:
			if !dates || args[1].Base == onion.Interval && name != "date_trunc" && name != "extract" {
				return nil, TypeNumeric, refuseArgs(name, args)
			}
		default:
			return nil, TypeNumeric, refuseArgs(name, args)
		}
		t := onion.Type{Base: args[1].Base}
		return []onion.Type{TypeText, t}, result(t), nil
	}
}

// timeFuncs are the date and time functions of the library.
func timeFuncs() map[string]*scalarFunc {
	numeric := func(onion.Type) onion.Type { return TypeNumeric }
	return map[string]*scalarFunc{
		"extract": {sig: timeSig("extract", numeric, true), call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			if a[1].Type.Base == onion.Interval {
				return extractInterval(a[0].Str, IntervalOf(a[1]))
			}
			return extractTime(a[0].Str, a[1], ev.Env)
		}},
		// date_part is extract as double precision.
		"date_part": {sig: timeSig("date_part", func(onion.Type) onion.Type { return TypeFloat8 }, true), call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			if a[1].Type.Base == onion.Date && a[1].Int >= timestampEndDays && a[1].Int != math.MaxInt32 {
				// date_part(text, date) reads the date as a timestamp.
				return NullOf(TypeFloat8), &pgconn.PgError{Severity: "ERROR", Code: "22008", Message: "date out of range for timestamp"}
			}
			v, err := extractTime(a[0].Str, a[1], ev.Env)
			if err != nil || v.Null {
				return NullOf(TypeFloat8), err
			}
			return Value{Type: TypeFloat8, Int: v.float8Bits()}, nil
		}},
		// date_trunc of a date truncates the timestamptz it is cast to.
		"date_trunc": {sig: timeSig("date_trunc", func(t onion.Type) onion.Type {
			switch t.Base {
			case onion.Date:
				return onion.Type{Base: onion.Timestamptz}
			case onion.Time, onion.Interval:
				return tInterval // a time is cast to interval (date_trunc(text, interval))
			}
			return t
		}, true), call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			x := a[1]
			switch x.Type.Base {
			case onion.Date:
				var err error
				if x, err = dateToTimestamp(x, onion.Type{Base: onion.Timestamptz}, ev.Env); err != nil {
					return Value{}, err
				}
			case onion.Time:
				return intervalTrunc(a[0].Str, Interval{us: x.Int})
			case onion.Interval:
				return intervalTrunc(a[0].Str, IntervalOf(x))
			}
			return dateTrunc(a[0].Str, x, ev.Env)
		}},
		"timezone": {sig: func(args []onion.Type) ([]onion.Type, onion.Type, error) {
			if len(args) != 2 || !(args[0] == tUnknown || isTextType(args[0])) || args[1].Base != onion.Timestamp && args[1].Base != onion.Timestamptz {
				return nil, TypeText, refuseArgs("timezone", args)
			}
			t := onion.Type{Base: args[1].Base}
			return []onion.Type{TypeText, t}, flipZone(t), nil
		}, call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			return atTimeZone(str(a[0]), a[1])
		}},
	}
}

// extractTimeOfDay is time_part (extract of a time, microseconds since
// midnight): the fields of a time of day and epoch; the others are
// PostgreSQL's error.
func extractTimeOfDay(field string, us int64) (Value, error) {
	if v, ok, err := secondsField(field, us%(60*usPerSec)); ok {
		return v, err
	}
	var v int64
	switch field {
	case "minute":
		v = us / (60 * usPerSec) % 60
	case "hour":
		v = us / (3600 * usPerSec)
	case "epoch":
		return numericScaled(us, 6)
	default:
		return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: fmt.Sprintf("unit \"%s\" not supported for type time without time zone", field)}
	}
	return Value{Type: TypeNumeric, Num: decimalFromInt(v)}, nil
}
