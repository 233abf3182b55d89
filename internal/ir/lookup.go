package ir

// Lookup is a decorrelated scalar subquery's value per key.
type Lookup struct {
	// Keys is how many key columns lead each row of Result; the value
	// is the last column.
	Keys   int
	Result SubqueryResult
}

// SubqueryResult is what an evaluated subquery returned.
type SubqueryResult struct {
	// Rows are the rows' values in text format (nil for NULL); a scalar
	// or IN subquery has one column, a lookup its keys and the value.
	Rows [][]*string
	// Types are the PostgreSQL names of the columns' types ("numeric",
	// "int4", "date", "bpchar", ...), the casts given to the constants.
	Types []string
	// Secret is set when the values were computed from encrypted
	// columns: they may reach the server only encrypted.
	Secret bool
}
