// Package exec computes, over decrypted values, the parts of a statement
// the server cannot compute over onions: split execution's expressions
// (ir.Expr), aggregates, window functions and ORDER BY keys, with
// PostgreSQL 15's types, rules and errors.
//
// It does no I/O and holds no keys: the engine decrypts the server's
// rows into Values, hands them to an Evaluator (one per goroutine, see
// Clone) and encodes the results. Where a construct is computed:
//
//   - value.go: Value, the one representation of a computed value, and
//     comparison, grouping keys and conversions.
//   - eval.go: typing and evaluation of expressions (operators,
//     comparisons, LIKE, CASE, casts), Evaluator.
//   - scalar*.go: the scalar library, by type (scalar.go lists the
//     functions): numbers, text, regular expressions, bytea, date and
//     time, intervals, jsonb, the clock.
//   - aggregate.go: aggregate functions' states and results.
//   - window.go: window functions and their frames.
//   - order.go: ORDER BY keys with NULLS FIRST/LAST.
//   - lookup.go: decorrelated subqueries' values per key.
//   - params.go: the types of parameters inferred from their use.
//
// Refusals are rewrite.Refused values (SQLSTATE 0A000) naming the
// construct; errors the server would raise carry its SQLSTATE.
package exec
