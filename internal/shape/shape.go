// Package shape takes the literal constants out of a simple-protocol
// statement, so that statements that differ only in them (pgbench's and
// sysbench's, an ORM's with its values inlined) can share one plan.
//
// It reads SQL text with a subset of PostgreSQL's lexical rules and gives
// up (ok false) on anything outside that subset: comments, escape, bit
// and dollar-quoted strings, parameters, several statements. A literal
// is taken out only where a parameter means the same: in a value
// position (after an operator, a comma, an opening parenthesis or a
// keyword that starts an expression), never in a type's modifiers, a
// typed literal (date '...'), ORDER BY or GROUP BY (where an integer is
// a column position), or a window clause.
package shape

import (
	"strconv"
	"strings"
)

// MaxLiterals bounds the literals one shape takes out: a longer list (a
// bulk INSERT's VALUES) would make a shape of its own per row count.
const MaxLiterals = 64

// Type OIDs of literals, as PostgreSQL types them (make_const).
const (
	oidUnknown = 0 // a quoted string: its type comes from where it is used
	oidInt4    = 23
	oidInt8    = 20
	oidNumeric = 1700
)

// A Shape is a statement with its literals replaced by parameters.
type Shape struct {
	// SQL is the statement with $k where its k-th literal was.
	SQL string
	// OIDs is the type of each parameter: int4, int8 or numeric for a
	// number, as PostgreSQL types the literal, 0 (unknown) for a string.
	OIDs []uint32
	// Values is each literal's value in text form.
	Values [][]byte
	// Tokens is each literal as written ('it''s', -5), to be sent back
	// unchanged where the plan passes the value through.
	Tokens []string
}

type kind int

const (
	kEOF kind = iota
	kIdent
	kQuotedIdent
	kString
	kNumber
	kParam
	kOp
	kPunct // ( ) [ ] , ; . :
	kCast  // ::
)

type token struct {
	kind       kind
	start, end int
	text       string   // lower case for keywords
	kw         *keyword // an identifier's, nil for other words
}

// lexer is a subset of PostgreSQL's scanner (scan.l).
type lexer struct {
	s   string
	pos int
	// lenient reads text the proxy wrote (Refs): escape strings and
	// every operator are read, not given up on.
	lenient bool
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isOpChar(c byte) bool { return strings.IndexByte("+-*/<>=~!@#%^&|`?", c) >= 0 }

// next returns the next token; ok is false where the text leaves the
// subset.
func (l *lexer) next() (token, bool) {
	s := l.s
	for l.pos < len(s) && isSpace(s[l.pos]) {
		l.pos++
	}
	start := l.pos
	if l.pos >= len(s) {
		return token{kind: kEOF, start: start, end: start}, true
	}
	c := s[l.pos]
	switch {
	case isIdentStart(c):
		for l.pos < len(s) && isIdentCont(s[l.pos]) {
			l.pos++
		}
		if l.pos < len(s) && (s[l.pos] == '\'' || s[l.pos] == '&' || s[l.pos] == '"') {
			// E'...', B'...', X'...', N'...', U&'...', U&"...".
			if l.lenient && s[l.pos] == '\'' && l.pos-start == 1 {
				return l.prefixedString(start, s[start] == 'e' || s[start] == 'E')
			}
			return token{}, false
		}
		t := token{kind: kIdent, start: start, end: l.pos, text: s[start:l.pos]}
		if t.kw = keywordOf(t.text); t.kw != nil {
			t.text = t.kw.word
		}
		return t, true
	case c == '"':
		l.pos++
		for {
			i := strings.IndexByte(s[l.pos:], '"')
			if i < 0 {
				return token{}, false
			}
			l.pos += i + 1
			if l.pos < len(s) && s[l.pos] == '"' {
				l.pos++
				continue
			}
			return token{kind: kQuotedIdent, start: start, end: l.pos}, true
		}
	case c == '\'':
		l.pos++
		for {
			i := strings.IndexAny(s[l.pos:], "'\\")
			if i >= 0 && s[l.pos+i] == '\\' && l.lenient {
				l.pos += i + 1 // standard_conforming_strings is on
				continue
			}
			if i < 0 || s[l.pos+i] == '\\' {
				// Unterminated, or a backslash, which means an escape
				// where standard_conforming_strings is off.
				return token{}, false
			}
			l.pos += i + 1
			if l.pos < len(s) && s[l.pos] == '\'' {
				l.pos++
				continue
			}
			return token{kind: kString, start: start, end: l.pos}, true
		}
	case isDigit(c) || c == '.' && l.pos+1 < len(s) && isDigit(s[l.pos+1]):
		return l.number(start)
	case c == '$':
		if l.pos+1 < len(s) && isDigit(s[l.pos+1]) {
			l.pos++
			for l.pos < len(s) && isDigit(s[l.pos]) {
				l.pos++
			}
			if l.pos < len(s) && isIdentCont(s[l.pos]) {
				return token{}, false
			}
			return token{kind: kParam, start: start, end: l.pos, text: s[start:l.pos]}, true
		}
		return token{}, false // a dollar-quoted string
	case c == ':':
		if l.pos+1 < len(s) && s[l.pos+1] == ':' {
			l.pos += 2
			return token{kind: kCast, start: start, end: l.pos, text: "::"}, true
		}
		if l.pos+1 < len(s) && s[l.pos+1] == '=' && !l.lenient {
			return token{}, false // := of named arguments
		}
		l.pos++
		return token{kind: kPunct, start: start, end: l.pos, text: ":"}, true
	case strings.IndexByte("()[],;.", c) >= 0:
		l.pos++
		return token{kind: kPunct, start: start, end: l.pos, text: s[start:l.pos]}, true
	case isOpChar(c):
		for l.pos < len(s) && isOpChar(s[l.pos]) {
			l.pos++
		}
		op := s[start:l.pos]
		if strings.Contains(op, "--") || strings.Contains(op, "/*") {
			return token{}, false // a comment
		}
		if len(op) > 1 && strings.ContainsAny(op, "+-") && !l.lenient {
			// PostgreSQL splits a trailing + or - off some operators
			// (so that x<-5 is x < -5): not worth following here.
			return token{}, false
		}
		return token{kind: kOp, start: start, end: l.pos, text: op}, true
	}
	return token{}, false
}

// prefixedString reads a string after its one-letter prefix: with
// escapes (E'...'), or without (B'...', X'...', N'...').
func (l *lexer) prefixedString(start int, escapes bool) (token, bool) {
	s := l.s
	l.pos++ // the opening quote
	for l.pos < len(s) {
		switch c := s[l.pos]; {
		case c == '\\' && escapes:
			l.pos += 2
		case c == '\'' && l.pos+1 < len(s) && s[l.pos+1] == '\'':
			l.pos += 2
		case c == '\'':
			l.pos++
			return token{kind: kString, start: start, end: l.pos}, true
		default:
			l.pos++
		}
	}
	return token{}, false
}

// number reads a numeric literal: digits, a fraction, an exponent.
func (l *lexer) number(start int) (token, bool) {
	s := l.s
	for l.pos < len(s) && isDigit(s[l.pos]) {
		l.pos++
	}
	if l.pos < len(s) && s[l.pos] == '.' {
		if l.pos+1 < len(s) && s[l.pos+1] == '.' {
			return token{}, false // 1..2
		}
		l.pos++
		for l.pos < len(s) && isDigit(s[l.pos]) {
			l.pos++
		}
	}
	if l.pos < len(s) && (s[l.pos] == 'e' || s[l.pos] == 'E') {
		l.pos++
		if l.pos < len(s) && (s[l.pos] == '+' || s[l.pos] == '-') {
			l.pos++
		}
		if l.pos >= len(s) || !isDigit(s[l.pos]) {
			return token{}, false
		}
		for l.pos < len(s) && isDigit(s[l.pos]) {
			l.pos++
		}
	}
	if l.pos < len(s) && (isIdentCont(s[l.pos]) || s[l.pos] == '.') {
		return token{}, false // 0x1F, 1abc, 1.2.3
	}
	return token{kind: kNumber, start: start, end: l.pos, text: s[start:l.pos]}, true
}

// A keyword is a word the shaper reads, with what it means there.
type keyword struct {
	word         string // in lower case
	valueStart   bool   // valueStart
	typmodded    bool   // typmodded
	refused      bool   // refused
	startsClause bool   // in clauses,
	clause       bool   // with this value
}

// keywords holds every word the shaper compares an identifier with,
// by its lower-case spelling: the maps below, and the words Of names.
// One lookup a word gives all it means (four map lookups a word were a
// third of the cost of shaping pgbench's statements).
var keywords = func() map[string]*keyword {
	m := map[string]*keyword{}
	kw := func(w string) *keyword {
		if m[w] == nil {
			m[w] = &keyword{word: w}
		}
		return m[w]
	}
	for _, w := range []string{"insert", "update", "delete", "select", "with", "into", "on", "distinct", "values", "as"} {
		kw(w)
	}
	for w := range valueStart {
		kw(w).valueStart = true
	}
	for w := range typmodded {
		kw(w).typmodded = true
	}
	for w := range refused {
		kw(w).refused = true
	}
	for w, c := range clauses {
		k := kw(w)
		k.startsClause, k.clause = true, c
	}
	return m
}()

// maxKeyword bounds the length of the words in keywords.
const maxKeyword = 16

// keywordOf returns the keyword word spells in any case, or nil. Only
// keywords are compared, so lowering the other words (which allocated
// for each upper-case word of pgbench's statements) would change
// nothing.
func keywordOf(word string) *keyword {
	if len(word) > maxKeyword {
		return nil
	}
	var buf [maxKeyword]byte
	for i := 0; i < len(word); i++ {
		c := word[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return keywords[string(buf[:len(word)])]
}

// valueStart lists the keywords after which an expression starts, so a
// literal there is a value a parameter can stand for.
var valueStart = map[string]bool{
	"select": true, "where": true, "and": true, "or": true, "not": true,
	"values": true, "then": true, "else": true, "when": true, "case": true,
	"like": true, "ilike": true, "between": true, "limit": true,
	"offset": true, "having": true, "on": true, "distinct": true,
}

// typmodded lists the type names whose parenthesised modifiers
// (varchar(20), numeric(10,2)) must stay literals.
var typmodded = map[string]bool{
	"numeric": true, "decimal": true, "dec": true, "varchar": true,
	"char": true, "character": true, "varying": true, "bit": true,
	"varbit": true, "time": true, "timestamp": true, "timetz": true,
	"timestamptz": true, "interval": true, "float": true, "nchar": true,
}

// refused lists keywords that make a statement keep its literals:
// SELECT INTO creates a table, and window frames take constant offsets.
var refused = map[string]bool{"into": true, "over": true, "window": true}

// clauses maps the keywords that start a clause to whether a literal in
// that clause becomes a parameter. Only where a literal is compared or
// assigned does a parameter mean the same: in a select list
// (SELECT 'x' AS v) or FROM, PostgreSQL types an untyped literal as
// text, and a plan treats a parameter there as the client's value.
var clauses = map[string]bool{
	"where": true, "having": true, "on": true, "set": true, "values": true,
	"limit": false, "offset": false, // may be applied after the proxy's own work
	"select": false, "from": false, "join": false, "using": false,
	"group": false, "order": false, "returning": false, "for": false,
	"insert": false, "update": false, "delete": false, "with": false,
	"into": false, "conflict": false,
}

// Of returns the shape of sql, a single SELECT, INSERT, UPDATE, DELETE or
// WITH statement; ok is false for anything else, or where the text
// leaves the lexical subset Of reads. Integers that fit in an int4 and
// quoted strings are taken out; other numbers (whose type depends on
// their value) stay.
func Of(sql string) (sh Shape, ok bool) {
	l := lexer{s: sql}
	var (
		b         strings.Builder
		copied    int   // sql[:copied] is in b
		prev      token // the last token
		prev2     token // the one before
		clauseAt  [8]bool
		clause    = clauseAt[:1] // per parenthesis depth: literals become parameters
		brackets  int            // depth of [ ]: array elements and subscripts stay
		typmodAt  = -1           // depth of the typmod parentheses being read
		wantValue = true
		afterType bool   // t is a type name
		vals      []byte // the literals' values, back to back
		first     string // the statement's first keyword
	)
	for {
		t, ok := l.next()
		if !ok {
			return Shape{}, false
		}
		if prev.kind == kEOF {
			switch {
			case t.kind != kIdent:
				return Shape{}, false
			case t.text == "insert" || t.text == "update" || t.text == "delete" || t.text == "select" || t.text == "with":
				first = t.text
			default:
				return Shape{}, false
			}
		}
		depth := len(clause) - 1
		switch t.kind {
		case kEOF:
			if depth != 0 || brackets != 0 {
				return Shape{}, false
			}
			if copied == 0 {
				sh.SQL = sql
			} else {
				b.WriteString(sql[copied:])
				sh.SQL = b.String()
			}
			return sh, true
		case kParam:
			return Shape{}, false
		case kIdent:
			if t.kw != nil && t.kw.refused && !(t.text == "into" && prev.kind == kIdent && prev.text == "insert") {
				return Shape{}, false
			}
			if t.kw != nil && t.kw.startsClause && !(t.text == "on" && prev.text == "distinct") {
				clause[depth] = t.kw.clause
			}
			if t.text == "values" {
				// An INSERT's rows; VALUES in FROM is a select list.
				clause[depth] = depth == 0 && first == "insert"
			}
		case kPunct:
			switch t.text {
			case "(":
				if prev.kind == kIdent && (prev.kw != nil && prev.kw.typmodded || afterType) && typmodAt < 0 {
					typmodAt = depth
				}
				clause = append(clause, clause[depth])
			case ")":
				if depth == 0 {
					return Shape{}, false
				}
				clause = clause[:depth]
				if typmodAt == depth-1 {
					typmodAt = -1
				}
			case "[":
				brackets++
			case "]":
				if brackets--; brackets < 0 {
					return Shape{}, false
				}
			case ";":
				// Only a trailing one: several statements keep their literals.
				if rest, _ := l.peek(); rest.kind != kEOF || depth != 0 {
					return Shape{}, false
				}
			}
		case kOp:
			// A unary minus before a number is part of the literal, as
			// PostgreSQL folds it (-2147483648 is an int4).
			if t.text == "-" && wantValue && l.pos < len(sql) && (isDigit(sql[l.pos]) || sql[l.pos] == '.') {
				n, ok := l.next()
				if !ok || n.kind != kNumber {
					return Shape{}, false
				}
				t = token{kind: kNumber, start: t.start, end: n.end, text: sql[t.start:n.end]}
			}
		}
		if (t.kind == kNumber || t.kind == kString) && wantValue && clause[depth] && brackets == 0 && typmodAt < 0 {
			if t.kind == kString {
				if n, _ := l.peek(); n.kind == kString {
					return Shape{}, false // 'a' 'b' on two lines is one string
				}
			}
			if t.end < len(sql) && isIdentCont(sql[t.end]) || t.start > 0 && isIdentCont(sql[t.start-1]) {
				return Shape{}, false // ''0: $10 would read as one parameter
			}
			next, _ := l.peek()
			constExpr := prev.kind == kOp && !isComparison(prev.text) && (prev2.kind == kNumber || prev2.kind == kString)
			if (t.kind == kString || numberType(t.text) == oidInt4) && !bindsTighter(next) && !constExpr {
				// ('5'::varchar(1) stays: a cast of a literal is folded
				// where a parameter's is not; so does 2147483647 + 1,
				// from either side.)
				if len(sh.Values) == MaxLiterals {
					return Shape{}, false
				}
				if sh.Values == nil {
					// Room for a few literals at once. (A value appended
					// past vals's room leaves the earlier ones where they
					// are.)
					b.Grow(min(len(sql), 4096) + 16)
					sh.OIDs, sh.Values, sh.Tokens = make([]uint32, 0, 8), make([][]byte, 0, 8), make([]string, 0, 8)
					vals = make([]byte, 0, min(len(sql), 1024))
				}
				b.WriteString(sql[copied:t.start])
				copied = t.end
				b.WriteByte('$')
				b.WriteString(strconv.Itoa(len(sh.Values) + 1))
				tok := sql[t.start:t.end]
				sh.Tokens = append(sh.Tokens, tok)
				from := len(vals)
				if t.kind == kString {
					for i := 1; i < len(tok)-1; i++ {
						vals = append(vals, tok[i])
						if tok[i] == '\'' {
							i++ // '' is one quote
						}
					}
					sh.OIDs = append(sh.OIDs, oidUnknown)
				} else {
					// As the server reads it: -0 is 0 (and 0, not -0, once
					// assigned to a double precision column).
					n, _ := strconv.ParseInt(tok, 10, 32)
					vals = strconv.AppendInt(vals, n, 10)
					sh.OIDs = append(sh.OIDs, oidInt4)
				}
				sh.Values = append(sh.Values, vals[from:len(vals):len(vals)])
			}
		}
		// A name after :: or AS (in CAST) is a type's.
		afterType = t.kind == kIdent && (prev.kind == kCast || prev.kind == kIdent && prev.text == "as")
		prev2, prev = prev, t
		wantValue = startsValue(t)
	}
}

// peek returns the token after the current position without reading it.
func (l *lexer) peek() (token, bool) {
	save := l.pos
	t, ok := l.next()
	l.pos = save
	return t, ok
}

// bindsTighter reports whether next, the token after a literal, makes
// the literal an operand of something that binds tighter than a
// comparison: an operator, a cast, a subscript.
func bindsTighter(next token) bool {
	switch next.kind {
	case kOp:
		return !isComparison(next.text)
	case kCast:
		return true
	case kPunct:
		return next.text == "[" || next.text == "."
	}
	return false
}

// isComparison reports whether op compares (binding less tightly than
// arithmetic).
func isComparison(op string) bool {
	switch op {
	case "=", "<", ">", "<=", ">=", "<>", "!=":
		return true
	}
	return false
}

// startsValue reports whether a literal right after t is a value (and a
// minus sign there is unary).
func startsValue(t token) bool {
	switch t.kind {
	case kOp:
		return true
	case kPunct:
		return t.text == "(" || t.text == "," || t.text == "["
	case kIdent:
		return t.kw != nil && t.kw.valueStart
	}
	return false
}

// numberType is the type PostgreSQL gives the numeric literal tok: an
// integer that fits is int4, then int8; anything else is numeric.
func numberType(tok string) uint32 {
	if strings.ContainsAny(tok, ".eE") {
		return oidNumeric
	}
	if _, err := strconv.ParseInt(tok, 10, 32); err == nil {
		return oidInt4
	}
	if _, err := strconv.ParseInt(tok, 10, 64); err == nil {
		return oidInt8
	}
	return oidNumeric
}

// A Ref is one $n in a statement's text.
type Ref struct {
	Start, End int // its bytes in the text
	N          int // its number, from 1
}

// Refs returns where sql refers to its parameters, reading it with the
// lexical rules Of reads (a $1 inside a string is not a reference); ok
// is false where the text leaves them.
func Refs(sql string) (refs []Ref, ok bool) {
	l := lexer{s: sql, lenient: true}
	for {
		t, ok := l.next()
		if !ok {
			return nil, false
		}
		switch t.kind {
		case kEOF:
			return refs, true
		case kParam:
			n, err := strconv.Atoi(t.text[1:])
			if err != nil || n < 1 {
				return nil, false
			}
			refs = append(refs, Ref{Start: t.start, End: t.end, N: n})
		}
	}
}
