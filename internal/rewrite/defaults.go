package rewrite

import (
	"fmt"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/ir"
)

// DEFAULTs of encrypted columns. The server cannot apply a default to a
// column it stores only as ciphertexts, so the proxy does, for each row
// that omits the column or gives it DEFAULT: a constant is recorded as
// its value (catalog.Column.Default), an expression that reads no column
// (now(), CURRENT_DATE, gen_random_uuid(), lower('X')) as its SQL
// (DefaultExpr), which the engine computes for each row as PostgreSQL
// would, now() as the server's transaction start.

// HasDefault reports whether encrypted column c has a DEFAULT the proxy
// applies.
func HasDefault(c *catalog.Column) bool {
	return c.Default != nil || c.DefaultExpr != nil
}

// DefaultExprOf is the expression of c's DEFAULT (DefaultExpr) for the
// engine to compute; nil when c has none.
func DefaultExprOf(c *catalog.Column) (*ir.Expr, error) {
	if c.DefaultExpr == nil {
		return nil, nil
	}
	sts, err := Parse("SELECT " + *c.DefaultExpr)
	if err != nil || len(sts) != 1 {
		return nil, fmt.Errorf("rewrite: the DEFAULT of %s does not parse: %v", c.Name, err)
	}
	targets := sts[0].Tree.Stmt.GetSelectStmt().GetTargetList()
	if len(targets) != 1 {
		return nil, fmt.Errorf("rewrite: the DEFAULT of %s is not one expression", c.Name)
	}
	b := &aggBuilder{inputs: map[string]int{}}
	e, err := b.expr(targets[0].GetResTarget().Val)
	if err != nil {
		return nil, err
	}
	if len(b.targets) > 0 {
		return nil, fmt.Errorf("rewrite: the DEFAULT of %s reads a column", c.Name)
	}
	return e, nil
}
