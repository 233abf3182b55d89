// Package ir holds the intermediate representation of what the proxy
// computes itself over decrypted values: expressions (Expr: inputs,
// constants, operators, functions of the engine's scalar library,
// aggregates, window functions with their frames, lookups of decorrelated
// subqueries), LIKE patterns, ORDER BY keys and LIMIT values.
//
// Package rewrite reads SQL into it (each construct in one place) and
// plans around it (rewrite.AggPlan: the server's part and the proxy's);
// package engine evaluates it. It does no I/O and knows no keys.
package ir
