package pgcopy

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// parseOpts parses the options of "COPY t FROM STDIN " + opts.
func parseOpts(opts string) (Options, error) {
	tree, err := pg_query.Parse("COPY t FROM STDIN " + opts)
	if err != nil {
		return Options{}, err
	}
	return ParseOptions(tree.Stmts[0].Stmt.GetCopyStmt().Options)
}

// mustOpts is parseOpts for options known to be valid.
func mustOpts(t testing.TB, opts string) Options {
	t.Helper()
	o, err := parseOpts(opts)
	if err != nil {
		t.Fatalf("options %q: %v", opts, err)
	}
	return o
}

// outcome is what a COPY did: the rows stored (nil fields for NULL), or
// its error.
type outcome struct {
	rows [][]*string
	err  string // "SQLSTATE: message", "" for success
}

func (o outcome) String() string {
	if o.err != "" {
		return "ERROR " + o.err
	}
	var b strings.Builder
	for _, r := range o.rows {
		b.WriteString("[")
		for i, f := range r {
			if i > 0 {
				b.WriteString(" ")
			}
			if f == nil {
				b.WriteString("NULL")
			} else {
				fmt.Fprintf(&b, "%q", *f)
			}
		}
		b.WriteString("]")
	}
	return b.String()
}

func errString(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code + ": " + pe.Message
	}
	return "?: " + err.Error()
}

// readAll runs a Reader over input fed in the given chunks (sizes; the
// rest in one last chunk), and returns its rows, or its error.
func readAll(o Options, columns []string, input []byte, chunks ...int) outcome {
	r, err := NewReader(o, "t", columns)
	if err != nil {
		return outcome{err: errString(err)}
	}
	var out outcome
	ended := false
	drain := func() error {
		for {
			row, err := r.Next()
			if err == io.EOF {
				ended = true
				return nil
			}
			if err != nil {
				return err
			}
			if row == nil {
				return nil
			}
			if len(row) != len(columns) {
				panic(fmt.Sprintf("row of %d fields for %d columns", len(row), len(columns)))
			}
			var rr []*string
			for _, f := range row {
				if f == nil {
					rr = append(rr, nil)
				} else {
					s := string(f)
					rr = append(rr, &s)
				}
			}
			out.rows = append(out.rows, rr)
		}
	}
	rest := input
	for _, n := range chunks {
		n = min(n, len(rest))
		r.Feed(rest[:n])
		rest = rest[n:]
		if err := drain(); err != nil {
			return outcome{err: errString(err)}
		}
	}
	r.Feed(rest)
	if err := drain(); err != nil {
		return outcome{err: errString(err)}
	}
	r.Close()
	if err := drain(); err != nil {
		return outcome{err: errString(err)}
	}
	if !ended {
		panic("Next returned no row and no error after Close")
	}
	return out
}
