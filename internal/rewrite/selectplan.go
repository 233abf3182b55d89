package rewrite

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// SelectPlan is how a SELECT over encrypted columns runs: the statement
// the server runs over the onions, and what the proxy computes over its
// decrypted rows when the server cannot compute all of it.
type SelectPlan struct {
	// Server is the server's statement. With Proxy set it is the
	// server's part: one visible column per input of Proxy.
	Server *QueryPlan
	// Proxy is what the proxy computes (split execution); nil when the
	// server computes the whole result and the proxy only decrypts it.
	Proxy *AggPlan
}

// SelectOptions tune PlanSelect.
type SelectOptions struct {
	// SplitOverRekey has the proxy compare columns under different keys
	// itself (split execution) instead of returning the *RekeyError that
	// asks for them to be re-keyed into one join group.
	SplitOverRekey bool
}

// PlanSelect is the one planning entry point of a SELECT over encrypted
// columns. The server computes what it can over the onions (PlanQuery);
// a statement it cannot compute so (a refusal, SQLSTATE 0A000) is
// planned for split execution (PlanAggregate). It fails with:
//   - a *RekeyError when the server could compute it after re-keying
//     columns into one join group (unless opts.SplitOverRekey);
//   - a refusal (0A000) when neither can run it: the server planner's,
//     with split execution's reason as its Detail;
//   - any other error of the statement itself (42703 for an unknown
//     column, ...), as PostgreSQL would report it; a *SplitError when
//     split execution found it.
//
// st is not changed.
func PlanSelect(st Statement, lookup TableLookup, opts SelectOptions) (*SelectPlan, error) {
	// The planners rewrite the tree they get: PlanQuery a copy, and
	// PlanAggregate another only when it needs one (most statements
	// never reach it; a copy is about a tenth of planning).
	work := st.Clone()
	DropSubqueryOrder(work)
	p, err := PlanQuery(work, lookup)
	var rk *RekeyError
	if errors.As(err, &rk) {
		if !opts.SplitOverRekey {
			return nil, err
		}
		err = rk.Refusal()
	}
	if err == nil {
		return &SelectPlan{Server: p}, nil
	}
	if !IsRefusal(err) {
		return nil, err
	}
	orig := st.Clone()
	DropSubqueryOrder(orig)
	agg, aggErr := PlanAggregate(orig, lookup)
	switch {
	case aggErr == nil:
		return &SelectPlan{Server: agg.Inner, Proxy: agg}, nil
	case IsRefusal(aggErr):
		return nil, withSplitRefusal(err, aggErr)
	}
	return nil, &SplitError{Refusal: err, err: aggErr}
}

// SplitError is an error split execution found in a statement the server
// cannot compute over the onions (an output expression PostgreSQL would
// reject, say); Refusal is the server planner's refusal, for strategies
// that do not need split execution.
type SplitError struct {
	Refusal error
	err     error
}

func (e *SplitError) Error() string { return e.err.Error() }
func (e *SplitError) Unwrap() error { return e.err }

// withSplitRefusal adds to the server planner's refusal why split
// execution cannot run the statement either (its own refusal), as the
// error's Detail.
func withSplitRefusal(refusal, split error) error {
	var pe *Refused
	var se *pgconn.PgError
	if !errors.As(refusal, &pe) || !errors.As(split, &se) || se.Message == pe.Message {
		return refusal
	}
	out := *pe
	detail := "The proxy cannot compute it either: " + se.Message + "."
	if out.Detail != "" {
		detail = out.Detail + " " + detail
	}
	out.Detail = detail
	return &out
}
