package search

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func seq(n int, start byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func newTestTokenizer(t testing.TB) *Tokenizer {
	t.Helper()
	z, err := New(seq(KeySize, 1))
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func TestNewRejectsKeySizes(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := New(make([]byte, n)); err == nil {
			t.Errorf("New accepted a %d-byte key", n)
		}
	}
}

func TestFold(t *testing.T) {
	// The ASCII fast path agrees with the general definition.
	for r := rune(0); r < utf8.RuneSelf; r++ {
		want := unicode.ToLower(r)
		for f := unicode.SimpleFold(want); f != unicode.ToLower(r); f = unicode.SimpleFold(f) {
			want = min(want, f)
		}
		if got := Fold(r); got != want {
			t.Errorf("Fold(%q) = %q, want %q", r, got, want)
		}
	}
	same := [][]rune{
		{'a', 'A'},
		{'k', 'K', '\u212a'},         // Kelvin sign
		{'s', 'S', '\u017f'},         // long s
		{'i', 'I', '\u0130'},         // capital I with dot above lower-cases to i
		{'é', 'É'},                   // é, É
		{'ß', '\u1e9e'},              // sharp s, capital sharp s
		{'σ', 'Σ', 'ς'},              // sigma, final sigma
		{'ǆ', 'ǅ', 'Ǆ'},              // dz digraph: lower, title, upper
		{'\u00b5', 'μ', 'Μ'},         // micro sign, mu
		{'ω', 'Ω', '\u2126'},         // omega, ohm sign
		{'ж', 'Ж'},                   // Cyrillic
		{'\u10d0', '\u1c90'},         // Georgian mkhedruli and mtavruli
		{'\U0001e922', '\U0001e900'}, // Adlam
	}
	for _, class := range same {
		for _, r := range class[1:] {
			if Fold(r) != Fold(class[0]) {
				t.Errorf("Fold(%q) = %q, Fold(%q) = %q: want equal", r, Fold(r), class[0], Fold(class[0]))
			}
		}
	}
	different := [][2]rune{{'a', 'b'}, {'i', 'ı'}, {'e', 'é'}, {'1', '!'}, {'日', '本'}}
	for _, p := range different {
		if Fold(p[0]) == Fold(p[1]) {
			t.Errorf("Fold(%q) == Fold(%q)", p[0], p[1])
		}
	}
	// Fold is idempotent and maps every case variant to the same rune.
	for r := rune(0); r <= 0x1ffff; r++ {
		f := Fold(r)
		if Fold(f) != f {
			t.Fatalf("Fold(Fold(%U)) = %U != Fold(%U) = %U", r, Fold(f), r, f)
		}
		if Fold(unicode.ToLower(r)) != f || Fold(unicode.ToUpper(r)) != f && unicode.ToLower(unicode.ToUpper(r)) == unicode.ToLower(r) {
			t.Fatalf("case variants of %U fold differently", r)
		}
	}
}

func TestIsWordRune(t *testing.T) {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		want := unicode.IsLetter(r) || unicode.IsDigit(r)
		if IsWordRune(r) != want {
			t.Errorf("IsWordRune(%q) = %v", r, !want)
		}
	}
	for _, r := range "éß日本ж\u0301٣" {
		if !IsWordRune(r) {
			t.Errorf("IsWordRune(%q) = false", r)
		}
	}
	for _, r := range " \t-_%.,;'\"😀€\u00a0" {
		if IsWordRune(r) {
			t.Errorf("IsWordRune(%q) = true", r)
		}
	}
}

// expect builds token sets from their definition, with the package's
// internal MAC.
type expect struct {
	z *Tokenizer
	m *macState
}

func newExpect(z *Tokenizer) *expect { return &expect{z, z.macs.Get().(*macState)} }

// tri returns the token of a trigram written with ^ and $ for the markers.
func (e *expect) tri(s string) int64 {
	r := []rune(s)
	if len(r) != 3 {
		panic("trigram of " + s)
	}
	for i := range r {
		switch r[i] {
		case '^':
			r[i] = markStart
		case '$':
			r[i] = markEnd
		default:
			r[i] = Fold(r[i])
		}
	}
	return e.m.trigram(pack(r[0], r[1], r[2]))
}

func (e *expect) word(s string) int64 { return e.m.word(foldRunes(nil, s)) }

func (e *expect) set(tris []string, words []string) []int64 {
	var out []int64
	for _, s := range tris {
		out = append(out, e.tri(s))
	}
	for _, w := range words {
		out = append(out, e.word(w))
	}
	if out == nil {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestTokens(t *testing.T) {
	z := newTestTokenizer(t)
	e := newExpect(z)
	tests := []struct {
		text  string
		tris  []string
		words []string
	}{
		{"abc", []string{"^ab", "abc", "bc$"}, []string{"abc"}},
		{"a", []string{"^a$"}, []string{"a"}},
		{"ab", []string{"^ab", "ab$"}, []string{"ab"}},
		{"Hi yo", []string{"^hi", "hi ", "i y", " yo", "yo$"}, []string{"hi", "yo"}},
		{"aaaa", []string{"^aa", "aaa", "aa$"}, []string{"aaaa"}},
		{"--", []string{"^--", "--$"}, nil},
		{"x-ray x", []string{"^x-", "x-r", "-ra", "ray", "ay ", "y x", " x$"}, []string{"x", "ray"}},
		{"Déjà vu", []string{"^dé", "déj", "éjà", "jà ", "à v", " vu", "vu$"}, []string{"déjà", "vu"}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got := z.Tokens(tt.text)
			want := e.set(tt.tris, tt.words)
			if !slices.Equal(got, want) {
				t.Errorf("Tokens(%q) = %v, want %v", tt.text, got, want)
			}
		})
	}
	empty := z.Tokens("")
	if len(empty) != 1 || empty[0] != e.m.trigram(pack(markStart, markEnd, markEnd)) {
		t.Errorf("Tokens(\"\") = %v, want the single empty-text token", empty)
	}
}

func TestTokensProperties(t *testing.T) {
	z := newTestTokenizer(t)
	other, _ := New(seq(KeySize, 2))
	texts := []string{"", "a", "Hello, World!", "hello hello hello", "日本語のテキスト", strings.Repeat("abc ", 100)}
	for _, s := range texts {
		tok := z.Tokens(s)
		if len(tok) == 0 {
			t.Errorf("Tokens(%q) is empty", s)
		}
		if !slices.IsSorted(tok) || len(slices.Compact(slices.Clone(tok))) != len(tok) {
			t.Errorf("Tokens(%q) is not sorted and distinct", s)
		}
		if !slices.Equal(tok, z.Tokens(s)) {
			t.Errorf("Tokens(%q) is not deterministic", s)
		}
		if !slices.Equal(tok, z.Tokens(strings.ToUpper(s))) {
			t.Errorf("Tokens(%q) depends on case", s)
		}
		o := other.Tokens(s)
		for _, x := range o {
			if slices.Contains(tok, x) {
				t.Errorf("Tokens(%q): keys do not separate tokens", s)
			}
		}
		prefix := []int64{42}
		if got := z.AppendTokens(prefix, s); got[0] != 42 || !slices.Equal(got[1:], tok) {
			t.Errorf("AppendTokens(%q) does not append", s)
		}
	}
	// Words and trigrams are domain-separated: the word "abc" is not
	// the trigram abc.
	e := newExpect(z)
	if e.word("abc") == e.tri("abc") {
		t.Error("word and trigram tokens collide")
	}
	// A 100-word text of repeated words has few tokens.
	if n := len(z.Tokens(strings.Repeat("abc ", 100))); n != 7 {
		t.Errorf("repeated text has %d tokens, want 7 (^ab abc bc_ c_a _ab c_$ and the word)", n)
	}
}

func TestWordTokens(t *testing.T) {
	z := newTestTokenizer(t)
	e := newExpect(z)
	got := z.WordTokens("Quick, brown... QUICK fox!")
	want := e.set(nil, []string{"quick", "brown", "fox"})
	if !slices.Equal(got, want) {
		t.Errorf("WordTokens = %v, want %v", got, want)
	}
	if !Contains(z.Tokens("the quick brown fox jumps"), got) {
		t.Error("a text with the words does not contain their tokens")
	}
	if Contains(z.Tokens("the quick brown foxes jump"), got) {
		t.Error("a text without the word fox contains its token")
	}
	if z.WordTokens(" ,;") != nil {
		t.Error("WordTokens of no words is not nil")
	}
}

func TestTokensForSegments(t *testing.T) {
	z := newTestTokenizer(t)
	e := newExpect(z)
	tests := []struct {
		pattern string
		escape  rune
		tris    []string
		words   []string
		none    bool // no prefilter
	}{
		{pattern: "%abc%", tris: []string{"abc"}},
		{pattern: "abc%", tris: []string{"^ab", "abc"}},
		{pattern: "%abc", tris: []string{"abc", "bc$"}},
		{pattern: "abc", tris: []string{"^ab", "abc", "bc$"}, words: []string{"abc"}},
		{pattern: "ab%", tris: []string{"^ab"}},
		{pattern: "%ab", tris: []string{"ab$"}},
		{pattern: "a", tris: []string{"^a$"}, words: []string{"a"}},
		{pattern: "%ab%", none: true},
		{pattern: "a_c", none: true},
		{pattern: "%", none: true},
		{pattern: "%%", none: true},
		{pattern: "_", none: true},
		{pattern: "", tris: nil, words: nil},
		{pattern: "%ABcd%", tris: []string{"abc", "bcd"}},
		{pattern: "% foo %", tris: []string{" fo", "foo", "oo "}, words: []string{"foo"}},
		{pattern: "%foo bar%", tris: []string{"foo", "oo ", "o b", " ba", "bar"}},
		{pattern: "foo %", tris: []string{"^fo", "foo", "oo "}, words: []string{"foo"}},
		{pattern: "%abc_def%", tris: []string{"abc", "def"}},
		{pattern: "%ab_cd%", none: true},
		{pattern: `%\%ab%`, escape: '\\', tris: []string{"%ab"}},
		{pattern: `%a\_b%`, escape: '\\', tris: []string{"a_b"}},
		{pattern: `%a\\b%`, escape: '\\', tris: []string{`a\b`}},
		{pattern: `%a!%b%`, escape: '!', tris: []string{"a%b"}},
		{pattern: `%a\%b%`, escape: '!', none: true},
		{pattern: `%ab\`, escape: '\\', none: true}, // invalid
		{pattern: `%a\b%`, escape: noEscape, tris: []string{`a\b`}},
		{pattern: `a%%b`, escape: '%', tris: []string{"^a%", "a%b", "%b$"}, words: []string{"a", "b"}},
		{pattern: `%a%%b%`, escape: '%', none: true}, // ends with the escape
		{pattern: "%déjà%", tris: []string{"déj", "éjà"}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			esc := tt.escape
			if esc == 0 {
				esc = defaultEscape
			}
			for _, ci := range []bool{false, true} {
				got := tokensForPattern(z, tt.pattern, esc, ci)
				var want []int64
				switch {
				case tt.none:
				case tt.pattern == "":
					want = []int64{e.m.trigram(pack(markStart, markEnd, markEnd))}
				default:
					want = e.set(tt.tris, tt.words)
				}
				if !slices.Equal(got, want) {
					t.Errorf("tokens of %q ESCAPE %q (ILIKE %v) = %v, want %v", tt.pattern, esc, ci, got, want)
				}
			}
		})
	}
}

func TestAppendArrayText(t *testing.T) {
	if got := string(AppendArrayText(nil, []int64{1, -2, 9223372036854775807, -9223372036854775808})); got != "{1,-2,9223372036854775807,-9223372036854775808}" {
		t.Errorf("AppendArrayText = %s", got)
	}
	if got := string(AppendArrayText([]byte("x"), nil)); got != "x{}" {
		t.Errorf("AppendArrayText(empty) = %s", got)
	}
}

func TestContains(t *testing.T) {
	tests := []struct {
		have, want []int64
		ok         bool
	}{
		{nil, nil, true},
		{[]int64{1, 2, 3}, nil, true},
		{[]int64{1, 2, 3}, []int64{1, 3}, true},
		{[]int64{1, 2, 3}, []int64{0}, false},
		{[]int64{1, 2, 3}, []int64{4}, false},
		{[]int64{1, 3}, []int64{2}, false},
		{nil, []int64{1}, false},
	}
	for _, tt := range tests {
		if got := Contains(tt.have, tt.want); got != tt.ok {
			t.Errorf("Contains(%v, %v) = %v", tt.have, tt.want, got)
		}
	}
}

// --- Random texts and patterns, shared with the PostgreSQL test. ---

// alphabet mixes ASCII (with LIKE's special characters), case pairs whose
// folding is subtle, CJK, an emoji and a combining accent.
var alphabet = []rune("aAbBcCxyzXYZ019 -_%\\!.éÉßẞkK\u212asSſiIıİσΣςüÜ日本😀\u0301\u0307ǅǆ")

func randomText(rng *rand.Rand, maxLen int) string {
	n := rng.IntN(maxLen + 1)
	var sb strings.Builder
	for range n {
		// Favour a small sub-alphabet so that patterns often match.
		if rng.IntN(3) > 0 {
			sb.WriteRune(alphabet[rng.IntN(8)])
		} else {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
	}
	return sb.String()
}

// flipCase changes the case of some runes of s.
func flipCase(rng *rand.Rand, s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch rng.IntN(4) {
		case 0:
			r = unicode.ToUpper(r)
		case 1:
			r = unicode.ToLower(r)
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// randomPattern returns a LIKE pattern built from a random piece of text,
// with case changes, wildcards and escapes, and the escape rune it uses.
func randomPattern(rng *rand.Rand, text string) (string, rune) {
	escape := defaultEscape
	switch rng.IntN(6) {
	case 0:
		escape = '!'
	case 1:
		escape = noEscape
	}
	runes := []rune(text)
	if rng.IntN(5) == 0 || len(runes) == 0 {
		runes = []rune(randomText(rng, 8))
	}
	i := rng.IntN(len(runes) + 1)
	j := i + rng.IntN(len(runes)-i+1)
	piece := runes[i:j]
	if rng.IntN(3) == 0 {
		piece = []rune(flipCase(rng, string(piece)))
	}
	var sb strings.Builder
	if rng.IntN(3) > 0 {
		sb.WriteByte('%')
	}
	for _, r := range piece {
		switch {
		case rng.IntN(10) == 0:
			sb.WriteByte('_')
			continue
		case rng.IntN(12) == 0:
			sb.WriteByte('%')
		}
		special := r == '%' || r == '_' || r == escape
		if special {
			if escape == noEscape {
				sb.WriteByte('_') // cannot be written literally
				continue
			}
			sb.WriteRune(escape)
		}
		sb.WriteRune(r)
	}
	if rng.IntN(3) > 0 {
		sb.WriteByte('%')
	}
	return sb.String(), escape
}

// goILIKE approximates ILIKE with a Unicode-aware lower(), as a libc
// UTF-8 collation does: lower both sides, then LIKE.
func goILIKE(text, pattern string, escape rune) bool {
	lower := func(s string) string { return strings.Map(unicode.ToLower, s) }
	esc := escape
	if esc != noEscape {
		esc = unicode.ToLower(esc)
	}
	return likeMatch(lower(text), lower(pattern), esc)
}

// TestNoFalseNegatives is the prefilter's property on random data, in Go:
// whenever a text matches a pattern (LIKE, or ILIKE with Unicode lower
// case), its tokens contain the pattern's tokens.
func TestNoFalseNegatives(t *testing.T) {
	z := newTestTokenizer(t)
	rng := rand.New(rand.NewPCG(7, 8))
	texts := make([]string, 300)
	toks := make([][]int64, len(texts))
	for i := range texts {
		texts[i] = randomText(rng, 30)
		toks[i] = z.Tokens(texts[i])
	}
	var matches, filtered, prefilters int
	for range 600 {
		pattern, escape := randomPattern(rng, texts[rng.IntN(len(texts))])
		if _, err := compileLike(pattern, escape, false); err != nil {
			t.Fatalf("generated an invalid pattern %q", pattern)
		}
		pt := tokensForPattern(z, pattern, escape, false)
		if pt != nil {
			prefilters++
		}
		for i, s := range texts {
			like := likeMatch(s, pattern, escape)
			ilike := goILIKE(s, pattern, escape)
			pass := Contains(toks[i], pt)
			if (like || ilike) && !pass {
				t.Fatalf("false negative: %q LIKE %q ESCAPE %q = %v, ILIKE = %v, but the prefilter rejects it", s, pattern, escape, like, ilike)
			}
			if like {
				matches++
			}
			if !pass {
				filtered++
			}
		}
	}
	if matches == 0 || filtered == 0 || prefilters < 100 {
		t.Errorf("weak test: %d matches, %d rows filtered out, %d patterns with a prefilter", matches, filtered, prefilters)
	}
	t.Logf("%d matches, %d of %d row checks filtered out, %d of 600 patterns prefilterable", matches, filtered, 600*len(texts), prefilters)
}

// --- Fuzzing. ---

// FuzzTokensForPattern reads arbitrary patterns and builds a text from
// each (its literal runs joined by fuzzer-chosen filler, case flipped for
// ILIKE); when the text matches, its tokens must contain the pattern's.
func FuzzTokensForPattern(f *testing.F) {
	z := newTestTokenizer(f)
	f.Add("%abc%", "xyz", uint8('\\'), false)
	f.Add(`a\%b_c%`, "é", uint8('\\'), true)
	f.Add("", "", uint8(0), false)
	f.Add("%% foo %", "bar", uint8('%'), true)
	f.Fuzz(func(t *testing.T, pattern, filler string, esc uint8, flip bool) {
		escape := rune(esc)
		if esc == 0 {
			escape = noEscape
		}
		if !utf8.ValidString(pattern) || !utf8.ValidString(filler) {
			return // the server only holds valid UTF-8
		}
		p, err := compileLike(pattern, escape, false)
		toks := tokensForPattern(z, pattern, escape, flip)
		if err != nil {
			if toks != nil {
				t.Fatal("an invalid pattern has tokens")
			}
			return
		}
		segs := p.Segments()
		var sb strings.Builder
		for i, s := range segs {
			if i > 0 || !s.AnchoredStart {
				sb.WriteString(filler)
			}
			sb.WriteString(s.Literal)
		}
		if len(segs) == 0 || !segs[len(segs)-1].AnchoredEnd {
			sb.WriteString(filler)
		}
		text := sb.String()
		if ok, _ := p.Eval(text); !ok {
			return // the runs alone do not make a match (e.g. a _ between them)
		}
		if !Contains(z.Tokens(text), toks) {
			t.Fatalf("false negative: %q LIKE %q", text, pattern)
		}
		if flip {
			upper := strings.ToUpper(text)
			if !Contains(z.Tokens(upper), toks) {
				t.Fatalf("false negative: %q ILIKE %q", upper, pattern)
			}
		}
	})
}

// --- Benchmarks. ---

// sampleText is a typical short text column value (about 200 runes).
var sampleText = "The quick brown fox jumps over the lazy dog; Pack my box with five dozen liquor jugs. " +
	"Sphinx of black quartz, judge my vow! Les élèves déjà partis ont oublié leurs cahiers à l'école, 2024-05-17."

func BenchmarkSearchTokens(b *testing.B) {
	z := newTestTokenizer(b)
	n := len(z.Tokens(sampleText))
	var dst []int64
	for b.Loop() {
		dst = z.AppendTokens(dst[:0], sampleText)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkSearchTokensShort(b *testing.B) {
	z := newTestTokenizer(b)
	const s = "alice@example.com"
	n := len(z.Tokens(s))
	var dst []int64
	for b.Loop() {
		dst = z.AppendTokens(dst[:0], s)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkSearchTokensForSegments(b *testing.B) {
	z := newTestTokenizer(b)
	for b.Loop() {
		tokensForPattern(z, "%brown fox%", defaultEscape, true)
	}
}

func BenchmarkSearchParallel(b *testing.B) {
	z := newTestTokenizer(b)
	n := len(z.Tokens(sampleText))
	b.RunParallel(func(pb *testing.PB) {
		var dst []int64
		for pb.Next() {
			dst = z.AppendTokens(dst[:0], sampleText)
		}
	})
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
