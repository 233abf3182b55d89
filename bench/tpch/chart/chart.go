// Package chart draws the ratio chart of the TPC-H benchmark report: one
// horizontal bar per query showing how long the query took through the proxy
// relative to a direct connection, on a base-10 logarithmic axis.
package chart

import (
	"errors"
	"fmt"
	"image/png"
	"io"
	"math"
	"strconv"
)

// Statuses a Bar may carry. Only StatusMatch requires a positive Ratio.
const (
	StatusMatch    = "match"    // proxied result equals the direct result
	StatusMismatch = "mismatch" // proxied result differs from the direct result
	StatusRefused  = "refused"  // the proxy refused to run the query
	StatusError    = "error"    // the query failed
)

// ErrNoBars is returned by WriteRatioChart when it is given no bars.
var ErrNoBars = errors.New("chart: no bars to draw")

// Bar is one row of the chart.
type Bar struct {
	// Label names the row, for example "Q1".
	Label string
	// Ratio is proxied time divided by direct time. It must be positive for
	// StatusMatch; for the other statuses it may be 0, in which case the row
	// shows the status as text instead of a bar.
	Ratio float64
	// Status is one of StatusMatch, StatusMismatch, StatusRefused or
	// StatusError and selects the bar colour.
	Status string
}

// WriteRatioChart writes a PNG chart of bars, in the given order, to w.
//
// The x axis is logarithmic (base 10) and always includes 1, where a
// reference line marks "same as direct". Each bar starts at 1 and ends at its
// ratio, so slower-than-direct queries extend to the right and faster ones to
// the left; the ratio is printed at the end of the bar.
//
// It returns ErrNoBars for an empty slice and an error for an unknown status,
// a ratio that is NaN, infinite or negative, or a zero ratio with
// StatusMatch.
func WriteRatioChart(w io.Writer, title string, bars []Bar) error {
	if err := validate(bars); err != nil {
		return err
	}
	img, err := render(title, bars)
	if err != nil {
		return err
	}
	return png.Encode(w, img)
}

func validate(bars []Bar) error {
	if len(bars) == 0 {
		return ErrNoBars
	}
	for i, b := range bars {
		if _, ok := palette[b.Status]; !ok {
			return fmt.Errorf("chart: bar %d (%q): unknown status %q", i, b.Label, b.Status)
		}
		switch {
		case math.IsNaN(b.Ratio) || math.IsInf(b.Ratio, 0) || b.Ratio < 0:
			return fmt.Errorf("chart: bar %d (%q): invalid ratio %v", i, b.Label, b.Ratio)
		case b.Ratio == 0 && b.Status == StatusMatch:
			return fmt.Errorf("chart: bar %d (%q): status %q needs a positive ratio", i, b.Label, b.Status)
		}
	}
	return nil
}

// decadeRange returns the exponents of the smallest and largest axis bounds:
// whole decades that cover every positive ratio, with at least 0.1 to 10.
func decadeRange(bars []Bar) (lo, hi int) {
	lo, hi = -1, 1
	for _, b := range bars {
		if b.Ratio <= 0 {
			continue
		}
		e := math.Log10(b.Ratio)
		lo = min(lo, int(math.Floor(e)))
		hi = max(hi, int(math.Ceil(e)))
	}
	return lo, hi
}

// formatRatio formats a ratio for the end of a bar, for example "1.34x".
func formatRatio(r float64) string {
	switch {
	case r >= 1e6:
		return strconv.FormatFloat(r, 'g', 3, 64) + "x"
	case r >= 100:
		return strconv.FormatFloat(r, 'f', 0, 64) + "x"
	case r >= 10:
		return strconv.FormatFloat(r, 'f', 1, 64) + "x"
	case r >= 0.01:
		return strconv.FormatFloat(r, 'f', 2, 64) + "x"
	default:
		return strconv.FormatFloat(r, 'g', 2, 64) + "x"
	}
}

// formatDecade formats the tick label for 10^e, for example "0.1" or "1000".
func formatDecade(e int) string {
	if e < -4 || e > 6 {
		return "1e" + strconv.Itoa(e)
	}
	return strconv.FormatFloat(math.Pow10(e), 'f', -1, 64)
}
