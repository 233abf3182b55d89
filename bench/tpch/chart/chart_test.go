package chart

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sampleBars is a TPC-H-like run: 22 queries with mixed statuses and ratios
// from 0.5 to 300.
func sampleBars() []Bar {
	return []Bar{
		{"Q1", 1.34, StatusMatch}, {"Q2", 2.8, StatusMatch},
		{"Q3", 0.5, StatusMatch}, {"Q4", 12.5, StatusMatch},
		{"Q5", 0, StatusRefused}, {"Q6", 1.02, StatusMatch},
		{"Q7", 45, StatusMatch}, {"Q8", 300, StatusMatch},
		{"Q9", 3.7, StatusMismatch}, {"Q10", 1, StatusMatch},
		{"Q11", 0, StatusRefused}, {"Q12", 0.8, StatusMatch},
		{"Q13", 110, StatusMatch}, {"Q14", 0, StatusError},
		{"Q15", 6.1, StatusMatch}, {"Q16", 0.66, StatusMismatch},
		{"Q17", 210, StatusMatch}, {"Q18", 9.9, StatusMatch},
		{"Q19", 1.5, StatusError}, {"Q20", 0, StatusRefused},
		{"Q21", 25, StatusMatch}, {"Q22", 1.15, StatusMatch},
	}
}

func decode(t *testing.T, data []byte) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decode PNG: %v", err)
	}
	return img
}

func rgbaAt(img image.Image, x, y int) color.RGBA {
	return color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
}

// run returns the extent [x0, x1) of the horizontal run of pixels of colour
// col on row y that is closest to x, or ok false if there is none.
func run(img image.Image, y, x int, col color.RGBA) (x0, x1 int, ok bool) {
	b := img.Bounds()
	for d := 0; d < b.Dx(); d++ {
		for _, cx := range []int{x - d, x + d} {
			if cx < b.Min.X || cx >= b.Max.X || rgbaAt(img, cx, y) != col {
				continue
			}
			x0, x1 = cx, cx
			for x0 > b.Min.X && rgbaAt(img, x0-1, y) == col {
				x0--
			}
			for x1 < b.Max.X && rgbaAt(img, x1, y) == col {
				x1++
			}
			return x0, x1, true
		}
	}
	return 0, 0, false
}

func TestWriteRatioChart(t *testing.T) {
	tests := []struct {
		name string
		bars []Bar
	}{
		{"sample", sampleBars()},
		{"single", []Bar{{"Q1", 1, StatusMatch}}},
		{"all faster", []Bar{{"Q1", 0.02, StatusMatch}, {"Q2", 0.3, StatusMismatch}}},
		{"only refused", []Bar{{"Q1", 0, StatusRefused}, {"Q2", 0, StatusError}}},
		{"huge range", []Bar{{"Q1", 1e-9, StatusMatch}, {"Q2", 1e12, StatusMatch}}},
		{"long label", []Bar{{strings.Repeat("very long query name ", 20), 4, StatusMatch}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteRatioChart(&buf, "TPC-H SF1: "+tt.name, tt.bars); err != nil {
				t.Fatalf("WriteRatioChart: %v", err)
			}
			img := decode(t, buf.Bytes())
			b := img.Bounds()
			if b.Dx() != width {
				t.Errorf("width = %d, want %d", b.Dx(), width)
			}
			if minH := len(tt.bars) * rowH; b.Dy() < minH || b.Dy() > minH+300 {
				t.Errorf("height = %d, want %d..%d", b.Dy(), minH, minH+300)
			}

			var l layout
			l.plot.Min.Y = plotTop
			// The reference line is the only run of its colour in the top
			// padding of the plot.
			refL, refR, ok := run(img, plotTop+1, b.Dx()/2, refLine)
			if !ok || refR-refL > 3 {
				t.Fatalf("reference line not found above the first row (run %d..%d)", refL, refR)
			}
			for i, bar := range tt.bars {
				y := l.rowY(i)
				col := palette[bar.Status].bar
				x0, x1, ok := run(img, y, refL, col)
				if bar.Ratio == 0 {
					if ok {
						t.Errorf("bar %d (%s, ratio 0): found a %s bar at x %d..%d", i, bar.Status, bar.Status, x0, x1)
					}
					continue
				}
				if !ok {
					t.Errorf("bar %d (%s): no pixel of colour %v in row y=%d", i, bar.Status, col, y)
					continue
				}
				if h := vertical(img, (x0+x1)/2, y, col); h != barH {
					t.Errorf("bar %d: height %d, want %d", i, h, barH)
				}
				// Bars start at the reference line: slower ones on its right,
				// faster ones on its left.
				switch {
				case bar.Ratio > 1 && x0 != refR:
					t.Errorf("bar %d (ratio %v) spans x %d..%d, want it to start at %d", i, bar.Ratio, x0, x1, refR)
				case bar.Ratio < 1 && x1 != refL:
					t.Errorf("bar %d (ratio %v) spans x %d..%d, want it to end at %d", i, bar.Ratio, x0, x1, refL)
				}
			}
		})
	}
}

// vertical returns the height of the run of colour col through (x, y).
func vertical(img image.Image, x, y int, col color.RGBA) int {
	y0, y1 := y, y
	for rgbaAt(img, x, y0-1) == col {
		y0--
	}
	for rgbaAt(img, x, y1) == col {
		y1++
	}
	return y1 - y0
}

func abs(v int) int { return max(v, -v) }

// TestLogScale checks that bar lengths are proportional to log10 of the
// ratio: 10x and 100x differ by one decade, as do 1 and 0.1.
func TestLogScale(t *testing.T) {
	bars := []Bar{
		{"a", 10, StatusMatch}, {"b", 100, StatusMatch},
		{"c", 0.1, StatusMismatch}, {"d", 1000, StatusError},
	}
	var buf bytes.Buffer
	if err := WriteRatioChart(&buf, "log scale", bars); err != nil {
		t.Fatal(err)
	}
	img := decode(t, buf.Bytes())
	var l layout
	l.plot.Min.Y = plotTop
	length := make([]int, len(bars))
	for i, b := range bars {
		x0, x1, ok := run(img, l.rowY(i), width/2, palette[b.Status].bar)
		if !ok {
			t.Fatalf("bar %d not found", i)
		}
		length[i] = x1 - x0
	}
	decade := length[0]
	for i, want := range []int{decade, 2 * decade, decade, 3 * decade} {
		if abs(length[i]-want) > 2 {
			t.Errorf("bar %d (ratio %v): length %d px, want %d (one decade is %d px)",
				i, bars[i].Ratio, length[i], want, decade)
		}
	}
}

func TestWriteRatioChartErrors(t *testing.T) {
	tests := []struct {
		name string
		bars []Bar
		want string // substring of the error; "" means ErrNoBars
	}{
		{"nil", nil, ""},
		{"empty", []Bar{}, ""},
		{"NaN", []Bar{{"Q1", math.NaN(), StatusMatch}}, "invalid ratio"},
		{"+Inf", []Bar{{"Q1", math.Inf(1), StatusMatch}}, "invalid ratio"},
		{"-Inf", []Bar{{"Q1", math.Inf(-1), StatusRefused}}, "invalid ratio"},
		{"negative", []Bar{{"Q1", 1, StatusMatch}, {"Q2", -2, StatusMatch}}, "invalid ratio"},
		{"zero match", []Bar{{"Q1", 0, StatusMatch}}, "needs a positive ratio"},
		{"unknown status", []Bar{{"Q1", 1, "slow"}}, "unknown status"},
		{"empty status", []Bar{{"Q1", 1, ""}}, "unknown status"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteRatioChart(&buf, "t", tt.bars)
			switch {
			case err == nil:
				t.Fatal("WriteRatioChart succeeded, want an error")
			case tt.want == "" && !errors.Is(err, ErrNoBars):
				t.Errorf("error = %v, want ErrNoBars", err)
			case !strings.Contains(err.Error(), tt.want):
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes on error", buf.Len())
			}
		})
	}
}

type failWriter struct{}

var errWrite = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWriteError(t *testing.T) {
	err := WriteRatioChart(failWriter{}, "t", sampleBars())
	if !errors.Is(err, errWrite) {
		t.Errorf("error = %v, want %v", err, errWrite)
	}
}

func TestFormat(t *testing.T) {
	ratios := []struct {
		r    float64
		want string
	}{
		{1.34, "1.34x"}, {0.5, "0.50x"}, {12.54, "12.5x"}, {300, "300x"},
		{0.004, "0.004x"}, {2.5e6, "2.5e+06x"},
	}
	for _, tt := range ratios {
		if got := formatRatio(tt.r); got != tt.want {
			t.Errorf("formatRatio(%v) = %q, want %q", tt.r, got, tt.want)
		}
	}
	decades := []struct {
		e    int
		want string
	}{{-1, "0.1"}, {0, "1"}, {1, "10"}, {3, "1000"}, {9, "1e9"}, {-6, "1e-6"}}
	for _, tt := range decades {
		if got := formatDecade(tt.e); got != tt.want {
			t.Errorf("formatDecade(%d) = %q, want %q", tt.e, got, tt.want)
		}
	}
}

// TestWriteSampleFile writes the sample chart to a temporary directory, or
// to $CHART_SAMPLE_OUT when set, for looking at it:
//
//	CHART_SAMPLE_OUT=/tmp/chart-sample.png go test -run TestWriteSampleFile ./bench/tpch/chart/
func TestWriteSampleFile(t *testing.T) {
	path := os.Getenv("CHART_SAMPLE_OUT")
	if path == "" {
		path = filepath.Join(t.TempDir(), "chart.png")
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteRatioChart(f, "TPC-H SF1: proxied vs direct query time", sampleBars()); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	decode(t, data)
	t.Logf("wrote %s (%d bytes)", path, len(data))
}
