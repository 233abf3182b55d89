package chart

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// Geometry in pixels.
const (
	width     = 900
	marginX   = 16  // left and right image margin
	labelGap  = 10  // between row labels and the plot
	maxLabelW = 200 // longer row labels are truncated
	plotTop   = 84  // title, legend and reference caption sit above
	plotPad   = 4   // vertical padding inside the plot
	rowH      = 24
	barH      = 16
	textGap   = 5  // between a bar end and its value
	bottomH   = 56 // tick labels and axis caption below the plot
	maxTicks  = 8  // labelled decades at most
)

// style is how a status is drawn.
type style struct {
	bar  color.RGBA // bar and legend fill
	text color.RGBA // status word
}

var palette = map[string]style{
	StatusMatch:    {bar: rgb(0x3b7dc9), text: rgb(0x2a5d99)},
	StatusMismatch: {bar: rgb(0xf28e2b), text: rgb(0xb35900)},
	StatusRefused:  {bar: rgb(0x9a9a9a), text: rgb(0x5e5e5e)},
	StatusError:    {bar: rgb(0xd62728), text: rgb(0xb01e1e)},
}

// legendOrder is the order of statuses in the legend.
var legendOrder = []string{StatusMatch, StatusMismatch, StatusRefused, StatusError}

var (
	white     = rgb(0xffffff)
	ink       = rgb(0x222222)
	softInk   = rgb(0x555555)
	zebra     = rgb(0xf4f6f8)
	gridMajor = rgb(0xc8c8c8)
	gridMinor = rgb(0xebebeb)
	refLine   = rgb(0x333333)
)

func rgb(v uint32) color.RGBA {
	return color.RGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 0xff}
}

type fontSet struct{ regular, bold *opentype.Font }

var loadFonts = sync.OnceValues(func() (fontSet, error) {
	r, err := opentype.Parse(goregular.TTF)
	if err != nil {
		return fontSet{}, err
	}
	b, err := opentype.Parse(gobold.TTF)
	if err != nil {
		return fontSet{}, err
	}
	return fontSet{regular: r, bold: b}, nil
})

// faces are created per chart: font.Face values are not safe for concurrent use.
type faces struct{ text, bold, title font.Face }

func newFaces() (*faces, error) {
	fs, err := loadFonts()
	if err != nil {
		return nil, err
	}
	face := func(f *opentype.Font, size float64) (font.Face, error) {
		return opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
	}
	var fc faces
	if fc.text, err = face(fs.regular, 13); err != nil {
		return nil, err
	}
	if fc.bold, err = face(fs.bold, 13); err != nil {
		return nil, err
	}
	if fc.title, err = face(fs.bold, 18); err != nil {
		return nil, err
	}
	return &fc, nil
}

// layout maps ratios and rows to pixels.
type layout struct {
	plot   image.Rectangle
	lo, hi int // axis spans 10^lo .. 10^hi
}

func (l *layout) x(r float64) int {
	f := (math.Log10(r) - float64(l.lo)) / float64(l.hi-l.lo)
	return l.plot.Min.X + int(math.Round(f*float64(l.plot.Dx())))
}

func (l *layout) rowY(i int) int { return l.plot.Min.Y + plotPad + i*rowH + rowH/2 }

// newLayout sizes the plot for n rows after labels of width labelW and
// widens the axis by whole decades until every value text fits in the plot.
func newLayout(bars []Bar, labelW int, measure func(Bar) int) *layout {
	l := &layout{plot: image.Rect(marginX+labelW+labelGap, plotTop,
		width-marginX, plotTop+2*plotPad+len(bars)*rowH)}
	l.lo, l.hi = decadeRange(bars)
	for range 8 {
		fitL, fitR := true, true
		ref := l.x(1)
		for _, b := range bars {
			w := measure(b) + textGap
			switch {
			case b.Ratio == 0:
				fitR = fitR && ref+w <= l.plot.Max.X
			case b.Ratio >= 1:
				fitR = fitR && l.x(b.Ratio)+w <= l.plot.Max.X
			default:
				fitL = fitL && l.x(b.Ratio)-w >= l.plot.Min.X
			}
		}
		if fitL && fitR {
			break
		}
		if !fitL {
			l.lo--
		}
		if !fitR {
			l.hi++
		}
	}
	return l
}

type canvas struct{ *image.RGBA }

func (c canvas) fill(r image.Rectangle, col color.RGBA) {
	draw.Draw(c.RGBA, r, image.NewUniform(col), image.Point{}, draw.Src)
}

// text draws s with its left end at x and its baseline at y and returns the
// x just past its right end.
func (c canvas) text(f font.Face, s string, x, y int, col color.RGBA) int {
	d := font.Drawer{Dst: c.RGBA, Src: image.NewUniform(col), Face: f, Dot: fixed.P(x, y)}
	d.DrawString(s)
	return d.Dot.X.Ceil()
}

func textW(f font.Face, s string) int { return font.MeasureString(f, s).Ceil() }

// baseline returns the baseline that vertically centres capitals and digits
// of f on y.
func baseline(f font.Face, y int) int {
	m := f.Metrics()
	h := m.CapHeight
	if h <= 0 {
		h = m.Ascent * 7 / 10
	}
	return y + h.Round()/2
}

// truncate shortens s with an ellipsis until it is at most w pixels wide.
func truncate(f font.Face, s string, w int) string {
	if textW(f, s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && textW(f, string(r)+"…") > w {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// valueText returns the text written at the end of b's bar, split into the
// ratio and the status word shown for statuses other than match.
func valueText(b Bar) (ratio, status string) {
	switch {
	case b.Ratio == 0:
		return "", b.Status
	case b.Status == StatusMatch:
		return formatRatio(b.Ratio), ""
	default:
		return formatRatio(b.Ratio), " " + b.Status
	}
}

func render(title string, bars []Bar) (*image.RGBA, error) {
	fc, err := newFaces()
	if err != nil {
		return nil, err
	}
	labels := make([]string, len(bars))
	labelW := 0
	for i, b := range bars {
		labels[i] = truncate(fc.text, b.Label, maxLabelW)
		labelW = max(labelW, textW(fc.text, labels[i]))
	}
	l := newLayout(bars, labelW, func(b Bar) int {
		r, s := valueText(b)
		return textW(fc.text, r) + textW(fc.bold, s)
	})
	c := canvas{image.NewRGBA(image.Rect(0, 0, width, l.plot.Max.Y+bottomH))}
	c.fill(c.Bounds(), white)

	for i := 1; i < len(bars); i += 2 {
		y := l.rowY(i)
		c.fill(image.Rect(marginX, y-rowH/2, l.plot.Max.X, y+rowH/2), zebra)
	}
	drawGrid(c, l, fc)
	for i, b := range bars {
		drawRow(c, l, fc, i, labels[i], b)
	}

	ref := l.x(1)
	c.fill(image.Rect(ref-1, l.plot.Min.Y-2, ref+1, l.plot.Max.Y), refLine)
	const refCaption = "same as direct"
	cx := min(max(ref-textW(fc.text, refCaption)/2, marginX), width-marginX-textW(fc.text, refCaption))
	c.text(fc.text, refCaption, cx, l.plot.Min.Y-7, ink)

	tw := textW(fc.title, title)
	c.text(fc.title, title, max((width-tw)/2, marginX), 28, ink)
	drawLegend(c, fc, bars)
	const caption = "proxied / direct time (log scale)"
	px := l.plot.Min.X + (l.plot.Dx()-textW(fc.text, caption))/2
	c.text(fc.text, caption, px, l.plot.Max.Y+42, ink)
	return c.RGBA, nil
}

// drawGrid draws decade gridlines, minor gridlines when there is room, the
// x axis and its tick labels.
func drawGrid(c canvas, l *layout, fc *faces) {
	step := (l.hi - l.lo + maxTicks - 1) / maxTicks
	decadeW := l.plot.Dx() / (l.hi - l.lo)
	top, bot := l.plot.Min.Y, l.plot.Max.Y
	for e := l.lo; e <= l.hi; e++ {
		if decadeW >= 80 && e < l.hi {
			for m := 2.0; m < 10; m++ {
				x := l.x(m * math.Pow10(e))
				c.fill(image.Rect(x, top, x+1, bot), gridMinor)
			}
		}
		labelled := e%step == 0
		if !labelled && decadeW < 6 {
			continue
		}
		x := l.x(math.Pow10(e))
		c.fill(image.Rect(x, top, x+1, bot+4), gridMajor)
		if labelled {
			s := formatDecade(e)
			c.text(fc.text, s, x-textW(fc.text, s)/2, bot+18, softInk)
		}
	}
	c.fill(image.Rect(l.plot.Min.X, bot, l.plot.Max.X+1, bot+1), softInk)
}

// drawRow draws row i: its label, its bar and the value at the bar's end, or
// for a row without a ratio the status word next to the reference line.
func drawRow(c canvas, l *layout, fc *faces, i int, label string, b Bar) {
	y := l.rowY(i)
	st := palette[b.Status]
	base := baseline(fc.text, y)
	c.text(fc.text, label, l.plot.Min.X-labelGap-textW(fc.text, label), base, ink)

	ref := l.x(1)
	ratio, status := valueText(b)
	if b.Ratio == 0 {
		c.text(fc.bold, status, ref+textGap, base, st.text)
		return
	}
	x0, x1 := min(ref, l.x(b.Ratio)), max(ref, l.x(b.Ratio))
	if x1-x0 < 3 { // keep ratios close to 1 visible beside the reference line
		x0, x1 = ref, ref+3
	}
	c.fill(image.Rect(x0, y-barH/2, x1, y+barH/2), st.bar)
	tx := x1 + textGap
	if b.Ratio < 1 {
		tx = x0 - textGap - textW(fc.text, ratio) - textW(fc.bold, status)
	}
	tx = c.text(fc.text, ratio, tx, base, ink)
	c.text(fc.bold, status, tx, base, st.text)
}

// drawLegend draws a swatch and name for each status present, centred
// under the title.
func drawLegend(c canvas, fc *faces, bars []Bar) {
	const swatch, gap = 12, 18
	var names []string
	for _, s := range legendOrder {
		for _, b := range bars {
			if b.Status == s {
				names = append(names, s)
				break
			}
		}
	}
	total := 0
	for _, s := range names {
		total += swatch + 5 + textW(fc.text, s) + gap
	}
	x, y := (width-total+gap)/2, 52
	for _, s := range names {
		c.fill(image.Rect(x, y-swatch/2, x+swatch, y+swatch/2), palette[s].bar)
		x = c.text(fc.text, s, x+swatch+5, baseline(fc.text, y), ink) + gap
	}
}
