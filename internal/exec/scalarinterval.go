package exec

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgnumeric"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Date, time and interval arithmetic as PostgreSQL 15 computes it
// (timestamp.c, date.c): timestamp[tz] ± interval (months and days in
// the session's time zone, then microseconds), date ± interval,
// timestamp[tz] - timestamp[tz], time ± interval, time - time,
// interval ± interval, interval * and / a number.

var tInterval = onion.Type{Base: onion.Interval}

func errTimestampRange() error {
	return &pgconn.PgError{Severity: "ERROR", Code: "22008", Message: "timestamp out of range"}
}

func errIntervalRange() error {
	return &pgconn.PgError{Severity: "ERROR", Code: "22008", Message: "interval out of range"}
}

// Interval is an Interval's fields.
type Interval struct {
	us     int64
	days   int32
	months int32
}

func IntervalOf(a Value) Interval {
	us, days, months := onion.IntervalParts([]byte(a.Str))
	return Interval{us, days, months}
}

func (iv Interval) val() Value {
	return Value{Type: tInterval, Str: string(onion.IntervalOf(iv.us, iv.days, iv.months).Bytes())}
}

// neg is interval_um.
func (iv Interval) neg() (Interval, error) {
	if iv.us == math.MinInt64 || iv.days == math.MinInt32 || iv.months == math.MinInt32 {
		return iv, errIntervalRange()
	}
	return Interval{-iv.us, -iv.days, -iv.months}, nil
}

// add is interval_pl: each field summed, with its overflow check.
func (iv Interval) add(y Interval) (Interval, error) {
	months, days := int64(iv.months)+int64(y.months), int64(iv.days)+int64(y.days)
	us := iv.us + y.us
	if months != int64(int32(months)) || days != int64(int32(days)) || (iv.us >= 0) == (y.us >= 0) && (us >= 0) != (iv.us >= 0) {
		return Interval{}, errIntervalRange()
	}
	return Interval{us, int32(days), int32(months)}, nil
}

// extractInterval is PostgreSQL 15's extract(field FROM interval): the
// fields of interval2itm (years and months from the months, the days
// as they are, hours down to microseconds from the time), and epoch
// with a year of 365.25 days and a month of 30.
func extractInterval(field string, iv Interval) (Value, error) {
	field = strings.ToLower(field)
	years, months := int64(iv.months/12), int64(iv.months%12)
	hours := iv.us / (3600 * usPerSec)
	rest := iv.us - hours*3600*usPerSec
	minutes := rest / (60 * usPerSec)
	if v, ok, err := secondsField(field, rest-minutes*60*usPerSec); ok {
		return v, err
	}
	var v int64
	switch field {
	case "minute":
		v = minutes
	case "hour":
		v = hours
	case "day":
		v = int64(iv.days)
	case "month":
		v = months
	case "quarter":
		v = months/3 + 1
	case "year":
		v = years
	case "decade":
		v = years / 10
	case "century":
		v = years / 100
	case "millennium":
		v = years / 1000
	case "epoch":
		// In quarter days, as PostgreSQL computes it; it fits in int64.
		secs := (1461*years + 120*months + 4*int64(iv.days)) * (86400 / 4)
		frac, err := numericScaled(iv.us, 6)
		if err != nil {
			return Value{}, err
		}
		d, err := frac.Num.Add(pgnumeric.FromInt64(secs))
		return Value{Type: TypeNumeric, Num: d}, err
	default:
		return Value{}, rewrite.Refusal("extract(%s ...) of interval is not supported in a query the proxy computes", field)
	}
	return Value{Type: TypeNumeric, Num: decimalFromInt(v)}, nil
}

// timeArith computes op over a and b when they are a date, time,
// timestamp or interval combination PostgreSQL has an operator for; ok
// is false for other operands. With NULL operands it gives the result's
// type (a NULL of it).
func timeArith(op string, a, b Value, env onion.Env) (v Value, ok bool, err error) {
	ka, _ := KindOf(a.Type)
	kb, _ := KindOf(b.Type)
	null := a.Null || b.Null
	number := func(k Kind) bool { return k == KindInt || k == KindFloat || k == KindNumeric }
	switch {
	case ka == KindTimestamp && kb == KindInterval && (op == "+" || op == "-"), ka == KindInterval && kb == KindTimestamp && op == "+":
		ts, iv := a, b
		if ka == KindInterval {
			ts, iv = b, a
		}
		if null {
			return NullOf(ts.Type), true, nil
		}
		span := IntervalOf(iv)
		if op == "-" {
			if span, err = span.neg(); err != nil {
				return Value{}, true, err
			}
		}
		r, err := timestampPlusInterval(ts.Int, span, zoneOf(ts.Type, env))
		return Value{Type: ts.Type, Int: r}, true, err
	case ka == KindDate && kb == KindInterval && (op == "+" || op == "-"), ka == KindInterval && kb == KindDate && op == "+":
		d, iv := a, b
		if ka == KindInterval {
			d, iv = b, a
		}
		if null {
			return NullOf(tTimestamp), true, nil
		}
		ts, err := dateToTimestamp(d, tTimestamp, env)
		if err != nil {
			return Value{}, true, err
		}
		v, _, err := timeArith(op, ts, iv, env)
		return v, true, err
	case ka == KindTimestamp && kb == KindTimestamp && op == "-" && a.Type.Base == b.Type.Base:
		if null {
			return NullOf(tInterval), true, nil
		}
		if a.Int == math.MinInt64 || a.Int == math.MaxInt64 || b.Int == math.MinInt64 || b.Int == math.MaxInt64 {
			return Value{}, true, &pgconn.PgError{Severity: "ERROR", Code: "22008", Message: "cannot subtract infinite timestamps"}
		}
		// PostgreSQL 15 subtracts without an overflow check (it wraps).
		iv, err := justifyHours(Interval{us: a.Int - b.Int})
		return iv.val(), true, err
	case ka == KindTime && kb == KindTime && op == "-":
		if null {
			return NullOf(tInterval), true, nil
		}
		return Interval{us: a.Int - b.Int}.val(), true, nil
	case ka == KindTime && kb == KindInterval && (op == "+" || op == "-"), ka == KindInterval && kb == KindTime && op == "+":
		t, iv := a, b
		if ka == KindInterval {
			t, iv = b, a
		}
		if null {
			return NullOf(tTime), true, nil
		}
		span := IntervalOf(iv).us
		if op == "-" {
			span = -span
		}
		// time_pl_interval: the time of day, wrapped.
		r := t.Int + span
		r -= r / usPerDay * usPerDay
		if r < 0 {
			r += usPerDay
		}
		return Value{Type: tTime, Int: r}, true, nil
	case ka == KindInterval && kb == KindInterval && (op == "+" || op == "-"):
		if null {
			return NullOf(tInterval), true, nil
		}
		x, y := IntervalOf(a), IntervalOf(b)
		if op == "-" {
			if y, err = y.neg(); err != nil {
				return Value{}, true, err
			}
		}
		r, err := x.add(y)
		return r.val(), true, err
	case ka == KindInterval && number(kb) && (op == "*" || op == "/"), number(ka) && kb == KindInterval && op == "*":
		iv, n := a, b
		if ka != KindInterval {
			iv, n = b, a
		}
		if null {
			return NullOf(tInterval), true, nil
		}
		f := math.Float64frombits(uint64(n.float8Bits()))
		var r Interval
		if op == "*" {
			r, err = intervalMul(IntervalOf(iv), f)
		} else {
			r, err = IntervalDiv(IntervalOf(iv), f)
		}
		return r.val(), true, err
	}
	return Value{}, false, nil
}

// timestampPlusInterval is timestamp(tz)_pl_interval: months, then days,
// in local time (loc nil for a timestamp), then the microseconds.
func timestampPlusInterval(ts int64, span Interval, loc *time.Location) (int64, error) {
	if ts == math.MinInt64 || ts == math.MaxInt64 {
		return ts, nil // infinities stay
	}
	if span.months != 0 {
		local, _ := onion.LocalTime(ts, loc)
		days := floorDivInt(local, usPerDay)
		tod := local - days*usPerDay
		y, m, d := onion.CivilDate(days)
		m += int(span.months)
		if m > 12 {
			y += (m - 1) / 12
			m = (m-1)%12 + 1
		} else if m < 1 {
			y += m/12 - 1
			m = m%12 + 12
		}
		if last := daysInMonth(y, m); d > last {
			d = last
		}
		var err error
		if y > 300000 || y < -300000 {
			return 0, errTimestampRange()
		}
		if ts, err = fromLocal(onion.DaysOf(y, m, d), tod, loc); err != nil {
			return 0, err
		}
	}
	if span.days != 0 {
		local, _ := onion.LocalTime(ts, loc)
		days := floorDivInt(local, usPerDay)
		tod := local - days*usPerDay
		var err error
		if ts, err = fromLocal(days+int64(span.days), tod, loc); err != nil {
			return 0, err
		}
	}
	r := ts + span.us
	if (span.us > 0 && r < ts) || (span.us < 0 && r > ts) || !onion.ValidTimestamp(r) {
		return 0, errTimestampRange()
	}
	return r, nil
}

// fromLocal is tm2timestamp of a local date (days since 2000-01-01) and
// time of day: out of range is an error.
func fromLocal(days, tod int64, loc *time.Location) (int64, error) {
	const maxDays = 300000 * 366
	if days < -maxDays || days > maxDays {
		return 0, errTimestampRange()
	}
	ts := onion.FromLocalTime(days*usPerDay+tod, loc)
	if !onion.ValidTimestamp(ts) {
		return 0, errTimestampRange()
	}
	return ts, nil
}

func daysInMonth(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// justifyHours is interval_justify_hours.
func justifyHours(iv Interval) (Interval, error) {
	whole := iv.us / usPerDay
	iv.us -= whole * usPerDay
	days := int64(iv.days) + whole
	if days != int64(int32(days)) {
		return iv, errIntervalRange()
	}
	iv.days = int32(days)
	if iv.days > 0 && iv.us < 0 {
		iv.us += usPerDay
		iv.days--
	} else if iv.days < 0 && iv.us > 0 {
		iv.us -= usPerDay
		iv.days++
	}
	return iv, nil
}

// tsRound is TSROUND: rounded to microseconds.
func tsRound(x float64) float64 { return math.RoundToEven(x*1e6) / 1e6 }

func fitsInt32(f float64) bool {
	return !math.IsNaN(f) && f >= math.MinInt32 && f < -float64(math.MinInt32)
}
func fitsInt64(f float64) bool {
	return !math.IsNaN(f) && f >= math.MinInt64 && f < -float64(math.MinInt64)
}

// intervalMul is PostgreSQL 15's interval_mul.
func intervalMul(span Interval, factor float64) (Interval, error) {
	var r Interval
	rd := float64(span.months) * factor
	if !fitsInt32(rd) {
		return r, errIntervalRange()
	}
	r.months = int32(rd)
	rd = float64(span.days) * factor
	if !fitsInt32(rd) {
		return r, errIntervalRange()
	}
	r.days = int32(rd)
	monthRemainderDays := (float64(span.months)*factor - float64(r.months)) * 30
	monthRemainderDays = tsRound(monthRemainderDays)
	secRemainder := (float64(span.days)*factor - float64(r.days) + monthRemainderDays - float64(int32(monthRemainderDays))) * 86400
	secRemainder = tsRound(secRemainder)
	if math.Abs(secRemainder) >= 86400 {
		r.days += int32(secRemainder / 86400)
		secRemainder -= float64(int32(secRemainder/86400)) * 86400
	}
	r.days += int32(monthRemainderDays)
	rd = math.RoundToEven(float64(span.us)*factor + secRemainder*1e6)
	if !fitsInt64(rd) {
		return r, errIntervalRange()
	}
	r.us = int64(rd)
	return r, nil
}

// IntervalDiv is PostgreSQL 15's interval_div.
func IntervalDiv(span Interval, factor float64) (Interval, error) {
	var r Interval
	if factor == 0 {
		return r, errDivisionByZero
	}
	r.months = int32(float64(span.months) / factor)
	r.days = int32(float64(span.days) / factor)
	monthRemainderDays := (float64(span.months)/factor - float64(r.months)) * 30
	monthRemainderDays = tsRound(monthRemainderDays)
	secRemainder := (float64(span.days)/factor - float64(r.days) + monthRemainderDays - float64(int32(monthRemainderDays))) * 86400
	secRemainder = tsRound(secRemainder)
	if math.Abs(secRemainder) >= 86400 {
		r.days += int32(secRemainder / 86400)
		secRemainder -= float64(int32(secRemainder/86400)) * 86400
	}
	r.days += int32(monthRemainderDays)
	r.us = int64(math.RoundToEven(float64(span.us)/factor + secRemainder*1e6))
	return r, nil
}

// intervalTrunc is PostgreSQL 15's interval_trunc: the interval's fields
// (interval2tm) below the unit set to zero.
func intervalTrunc(field string, iv Interval) (Value, error) {
	years, months, hours, mins, secs, fsec := onion.IntervalFields(iv.us, iv.months)
	days := int64(iv.days)
	switch strings.ToLower(field) {
	case "millennium":
		years = years / 1000 * 1000
		fallthrough
	case "century":
		years = years / 100 * 100
		fallthrough
	case "decade":
		years = years / 10 * 10
		fallthrough
	case "year":
		months = 0
		fallthrough
	case "quarter":
		months = 3 * (months / 3)
		fallthrough
	case "month":
		days = 0
		fallthrough
	case "day":
		hours = 0
		fallthrough
	case "hour":
		mins = 0
		fallthrough
	case "minute":
		secs = 0
		fallthrough
	case "second":
		fsec = 0
	case "milliseconds":
		fsec = fsec / 1000 * 1000
	case "microseconds":
	case "week":
		return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: fmt.Sprintf("interval units \"%s\" not supported because months usually have fractional weeks", field)}
	default:
		return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "0A000", Message: fmt.Sprintf("interval units \"%s\" not supported", field)}
	}
	m := years*12 + months
	if m != int64(int32(m)) {
		return Value{}, errIntervalRange()
	}
	return Interval{us: ((hours*60+mins)*60+secs)*usPerSec + fsec, days: int32(days), months: int32(m)}.val(), nil
}

// intervalToTime is interval_time: the time of day of an interval's
// microseconds.
func intervalToTime(iv Interval) int64 {
	r := iv.us
	if r >= usPerDay {
		r -= r / usPerDay * usPerDay
	} else if r < 0 {
		days := (-r + usPerDay - 1) / usPerDay
		r += days * usPerDay
	}
	return r
}
