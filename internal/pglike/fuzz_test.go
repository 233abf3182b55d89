package pglike

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// FuzzMatch checks that Compile and Match never panic, that Match and Eval
// agree, that only patterns with MayFail fail, and, for valid UTF-8, that
// Eval agrees with the reference matcher.
func FuzzMatch(f *testing.F) {
	for _, c := range likeCases {
		f.Add(c.text, c.pattern, c.escape, c.ci)
	}
	f.Add("\xff\xc3", "\xc3%_", "\xe2\x82", false)
	f.Add("a\xe2\x82", `%\`, "", true)
	f.Add("x", "%", NoEscape, false)
	f.Fuzz(func(t *testing.T, text, pattern, escape string, ci bool) {
		p, err := Compile(pattern, escape, ci)
		if err != nil {
			if errName(err) != errEscape {
				t.Fatalf("Compile(%q, %q): %v", pattern, escape, err)
			}
			return
		}
		m := p.Match(text)
		ok, err := p.Eval(text)
		if m != ok {
			t.Fatalf("%q %s %q ESCAPE %q: Match %v, Eval %v", text, op(ci), pattern, escape, m, ok)
		}
		if err != nil && (ok || !p.MayFail() || errName(err) != errTrail) {
			t.Fatalf("%q %s %q ESCAPE %q: Eval %v, %v; MayFail %v", text, op(ci), pattern, escape, ok, err, p.MayFail())
		}
		checkRef(t, p, text, pattern, escape, ci)
	})
}

// TestReference compares Eval with the reference matcher on longer random
// strings than the differential test uses.
func TestReference(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 3))
	alpha := []string{"a", "b", "A", "%", "_", `\`, "é", "😀", "#"}
	str := func(n int) string {
		var b strings.Builder
		for range r.IntN(n + 1) {
			b.WriteString(alpha[r.IntN(len(alpha))])
		}
		return b.String()
	}
	escs := []string{DefaultEscape, NoEscape, "#", "a", "%", "é", "😀"}
	for range 50000 {
		text, pattern, esc, ci := str(20), str(12), escs[r.IntN(len(escs))], r.IntN(2) == 0
		p, err := Compile(pattern, esc, ci)
		if err != nil {
			t.Fatal(err)
		}
		checkRef(t, p, text, pattern, esc, ci)
	}
}

// TestNoPathologicalBacktracking checks that many % on a long text stay fast.
func TestNoPathologicalBacktracking(t *testing.T) {
	text := strings.Repeat("a", 5000)
	p := MustCompile(strings.Repeat("%a", 200)+"%b", DefaultEscape, false)
	if p.Match(text) {
		t.Error("matched")
	}
	if !MustCompile(strings.Repeat("%a", 200)+"%", DefaultEscape, false).Match(text) {
		t.Error("did not match")
	}
}

func BenchmarkMatch(b *testing.B) {
	p := MustCompile("%héllo%w_rld%", DefaultEscape, true)
	s := strings.Repeat("x", 100) + "HÉllo big wOrld" + strings.Repeat("y", 100)
	for b.Loop() {
		p.Match(s)
	}
}
