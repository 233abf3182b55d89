package pglike

import (
	"slices"
	"testing"
)

func TestSegments(t *testing.T) {
	for _, tt := range []struct {
		pattern, escape string
		ci              bool
		want            []Segment
	}{
		{`ab%c_d\%e%`, DefaultEscape, false, []Segment{{"ab", true, false}, {"c", false, false}, {"d%e", false, false}}},
		{"", DefaultEscape, false, []Segment{{"", true, true}}},
		{"%_%", DefaultEscape, false, nil},
		{"abc", DefaultEscape, false, []Segment{{"abc", true, true}}},
		{`a#%b`, "#", false, []Segment{{"a%b", true, true}}},
		{`a\b%`, "#", false, []Segment{{`a\b`, true, false}}},
		{`a\b%`, NoEscape, false, []Segment{{`a\b`, true, false}}},
		{`%%`, "%", false, []Segment{{"%", true, true}}},
		{`%ÉcoLE_`, DefaultEscape, true, []Segment{{"École", false, false}}},
		{"%日本\\語%", DefaultEscape, false, []Segment{{"日本語", false, false}}},
		// A pattern that may fail has no prefilter.
		{`a%\`, DefaultEscape, false, nil},
		{`a%#`, "#", false, nil},
	} {
		p, err := Compile(tt.pattern, tt.escape, tt.ci)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Segments(); !slices.Equal(got, tt.want) {
			t.Errorf("Segments(%q ESCAPE %q) = %+v, want %+v", tt.pattern, tt.escape, got, tt.want)
		}
	}
}
