package pgcopy

import "unicode/utf8"

// Splitting the input into logical lines (PostgreSQL's CopyReadLine).
//
// A logical line ends at an unquoted (csv) or unescaped (text) line
// ending. The first line ending of the data fixes its style (\n, \r or
// \r\n); a different one later is an error, in text format as in csv.
// The end-of-data marker \. followed by a line ending ends the data: in
// text format anywhere (the data before it on that line is still a row),
// in csv only at the start of a line (elsewhere it is data).
//
// The splitter resumes where it stopped when a line is incomplete, and
// looks ahead before it changes any state, so that no byte is scanned
// twice.

const (
	msgLiteralCR   = "literal carriage return found in data"
	msgUnquotedCR  = "unquoted carriage return found in data"
	hintLiteralCR  = "Use \"\\r\" to represent carriage return."
	hintUnquotedCR = "Use quoted CSV field to represent carriage return."
	msgLiteralNL   = "literal newline found in data"
	msgUnquotedNL  = "unquoted newline found in data"
	hintLiteralNL  = "Use \"\\n\" to represent newline."
	hintUnquotedNL = "Use quoted CSV field to represent newline."
	msgMarkerStyle = "end-of-copy marker does not match previous newline style"
	msgMarkerBad   = "end-of-copy marker corrupt"
)

// readLine returns the next logical line without its line ending. ok is
// false when the buffered input ends inside the line and Close was not
// called; the next call resumes there. last is true when the line is the
// last one: it ended at the end-of-data marker or at the end of the
// input (then it may be empty, meaning no line). line aliases r.buf and
// is valid until the next Feed.
func (r *Reader) readLine() (line []byte, last, ok bool, err error) {
	if !r.inLine {
		r.inLine = true
		r.line++
		r.inQuote, r.lastWasEsc = false, false
		r.scan = r.off
	}
	// The scanner reads only bytes verified to be UTF-8 (see verify), as
	// PostgreSQL does: an invalid byte is an error once the scan needs it,
	// and not before, so a row before it is still read, and nothing after
	// the end-of-data marker is checked.
	buf := r.buf[:r.verified]
	atEOF := r.closed && r.verified == len(r.buf)
	csv := r.o.Format == CSV
	// The escape character matters only when it differs from the quote,
	// which otherwise simply toggles.
	quote, esc := r.o.Quote, r.o.Escape
	hasEsc := esc != quote
	// have reports whether byte k can be read: verified, or past the end
	// of input (then it reads as 0, like the server's zero padding).
	have := func(k int) bool { return k < len(buf) || atEOF }
	at := func(k int) byte {
		if k < len(buf) {
			return buf[k]
		}
		return 0
	}
	i := r.scan
	for {
		// Skip the bytes that change nothing but csv's escape state.
		if j := i; j < len(buf) && !r.special[buf[j]] {
			for j++; j < len(buf) && !r.special[buf[j]]; j++ {
			}
			i, r.lastWasEsc = j, false
		}
		if i >= len(buf) {
			if !atEOF {
				return r.blocked(i)
			}
			// End of input: what there is of the line is the last line.
			return r.endLine(i, i, true)
		}
		c := buf[i]
		first := i == r.off
		marker := c == '\\' && (!csv || first) // a possible \.
		// Look ahead first: the bytes a decision below needs.
		// (csv looks past every \r and \, text past a \r only while a
		// \r\n line ending is possible.)
		crPeek := c == '\r' && (csv || r.eol == eolUnknown || r.eol == eolCRNL)
		if (crPeek || (csv && c == '\\') || marker) && !have(i+1) {
			return r.blocked(i)
		}
		if marker && at(i+1) == '.' {
			if !have(i+2) || (r.eol == eolCRNL && at(i+2) == '\r' && !have(i+3)) {
				return r.blocked(i)
			}
		}
		i++
		if csv {
			// Quote state: the escape character only escapes inside
			// quotes, and the second of two escapes escapes nothing.
			isEsc := hasEsc && c == esc
			if r.inQuote && isEsc {
				r.lastWasEsc = !r.lastWasEsc
			}
			if c == quote && !r.lastWasEsc {
				r.inQuote = !r.inQuote
			}
			if !isEsc {
				r.lastWasEsc = false
			}
			// PostgreSQL counts quoted line breaks as lines, by the
			// character that ends lines (\r until the style is known).
			nl := byte('\r')
			if r.eol == eolNL {
				nl = '\n'
			}
			if r.inQuote && c == nl {
				r.line++
			}
		}
		if c == '\r' && (!csv || !r.inQuote) {
			end := i - 1
			switch r.eol {
			case eolUnknown, eolCRNL:
				if at(i) == '\n' {
					i++
					r.eol = eolCRNL
				} else {
					if r.eol == eolCRNL {
						return nil, false, false, lineEndingError(csv, true)
					}
					r.eol = eolCR
				}
			case eolNL:
				return nil, false, false, lineEndingError(csv, true)
			}
			return r.endLine(end, i, false)
		}
		if c == '\n' && (!csv || !r.inQuote) {
			if r.eol == eolCR || r.eol == eolCRNL {
				return nil, false, false, lineEndingError(csv, false)
			}
			r.eol = eolNL
			return r.endLine(i-1, i, false)
		}
		if marker {
			if i >= len(buf) {
				// A backslash just before the end of input is data.
				return r.endLine(i, i, true)
			}
			if buf[i] != '.' {
				if !csv {
					i++ // the escaped character is data, even \r or \n
				}
				continue
			}
			next, err := r.marker(i+1, csv)
			if err != nil {
				return nil, false, false, err
			}
			if next >= 0 {
				// The data ends; the text before \. is its last line.
				return r.endLine(i-1, next, true)
			}
			// csv: \. followed by more is data; go on after the \.
		}
	}
}

// marker checks the bytes after \. starting at i. It returns where the
// marker ends when it is one, -1 when (csv only) the \. is data.
func (r *Reader) marker(i int, csv bool) (int, error) {
	buf := r.buf[:r.verified]
	at := func(k int) byte {
		if k < len(buf) {
			return buf[k]
		}
		return 0
	}
	notMarker := func(msg string) (int, error) {
		if csv {
			return -1, nil
		}
		return 0, pgErr(codeBadCopyFormat, "%s", msg)
	}
	if r.eol == eolCRNL {
		switch at(i) {
		case '\r':
		case '\n':
			return notMarker(msgMarkerStyle)
		default:
			return notMarker(msgMarkerBad)
		}
		i++
	}
	c := at(i)
	i++
	if c != '\r' && c != '\n' {
		return notMarker(msgMarkerBad)
	}
	if ((r.eol == eolNL || r.eol == eolCRNL) && c != '\n') || (r.eol == eolCR && c != '\r') {
		return 0, pgErr(codeBadCopyFormat, msgMarkerStyle)
	}
	return i, nil
}

// endLine finishes the current line, which ends (without its line ending)
// at end; the next one starts at next.
func (r *Reader) endLine(end, next int, last bool) ([]byte, bool, bool, error) {
	line := r.buf[r.off:end]
	if len(line) > r.maxRow {
		return nil, false, false, r.tooLong(len(line))
	}
	r.off, r.scan, r.inLine = next, next, false
	return line, last, true, nil
}

// blocked stops the scan at i, which needs the byte at r.verified: an
// encoding error when that starts an invalid character (or an incomplete
// one at the end of input), else a wait for more input.
func (r *Reader) blocked(i int) ([]byte, bool, bool, error) {
	r.scan = i
	// Like the server, decide only with a character's maximal length in
	// hand (or at the end of input), so the message does not depend on
	// where chunks end.
	if rest := r.buf[r.verified:]; len(rest) >= utf8.UTFMax || len(rest) > 0 && r.closed {
		return nil, false, false, encodingError(rest)
	}
	if n := len(r.buf) - r.off; n > r.maxRow {
		return nil, false, false, r.tooLong(n)
	}
	return nil, false, false, nil
}

// verify extends r.verified over the whole UTF-8 characters that follow
// it, up to an invalid or incomplete one.
func (r *Reader) verify() {
	r.verified += validPrefix(r.buf[r.verified:])
}

func (r *Reader) tooLong(n int) error {
	return pgErr(codeLimitExceeded, "COPY row of more than %d bytes exceeds the proxy's limit of %d bytes", n, r.maxRow)
}

func lineEndingError(csv, cr bool) error {
	msg, hint := msgLiteralNL, hintLiteralNL
	switch {
	case cr && csv:
		msg, hint = msgUnquotedCR, hintUnquotedCR
	case cr:
		msg, hint = msgLiteralCR, hintLiteralCR
	case csv:
		msg, hint = msgUnquotedNL, hintUnquotedNL
	}
	e := pgErr(codeBadCopyFormat, "%s", msg)
	e.Hint = hint
	return e
}
