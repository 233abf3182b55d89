package onion

import "time"

// Wall-clock arithmetic on timestamps (microseconds since 2000-01-01),
// for the functions the proxy computes over them (extract, date_trunc,
// AT TIME ZONE): a timestamptz is read in the session's time zone, as
// PostgreSQL's timestamp2tm does.

// LocalTime returns ts as a wall-clock time in loc (microseconds since
// 2000-01-01 local) and loc's offset then, in seconds east of UTC. A nil
// loc reads ts as it is (a timestamp without time zone, or UTC).
func LocalTime(ts int64, loc *time.Location) (local int64, east int) {
	if loc == nil {
		return ts, 0
	}
	sec := floorDiv(ts, usecsPerSec) + (pgEpochJD-unixEpochJD)*secsPerDay
	_, east = time.Unix(sec, 0).In(loc).Zone()
	return ts + int64(east)*usecsPerSec, east
}

// FromLocalTime returns the instant of wall-clock time local in loc, a
// time in a spring-forward gap or a fall-back overlap read as PostgreSQL
// reads it (DetermineTimeZoneOffset).
func FromLocalTime(local int64, loc *time.Location) int64 {
	if loc == nil {
		return local
	}
	days := floorDiv(local, usecsPerDay)
	tod := local - days*usecsPerDay
	y, m, d := civilDate(days + pgEpochJD)
	secs := int(tod / usecsPerSec)
	west := determineTimeZoneOffset(loc, y, m, d, secs/3600, secs/60%60, secs%60)
	return local + int64(west)*usecsPerSec
}

// CivilDate splits days since 2000-01-01 into year (0 is 1 BC, -1 is 2
// BC), month and day of the proleptic Gregorian calendar.
func CivilDate(days int64) (y, m, d int) { return civilDate(days + pgEpochJD) }

// DaysOf is the inverse of CivilDate.
func DaysOf(y, m, d int) int64 { return julianDay(y, m, d) - pgEpochJD }
