// Package pgcopy reads and writes the data of PostgreSQL's COPY in its text
// and csv formats, so that the proxy can rewrite COPY ... FROM STDIN row by
// row while the data streams through it, and writes rows of cells in the
// binary format (BinaryWriter).
//
// The Reader follows the parser of PostgreSQL 15 (the version the
// differential tests run against) byte for byte: where rows and fields
// end, how escapes and quotes decode, which raw field is NULL, which lines
// are errors. The proxy parses the client's data and sends the server a
// re-encoded form, so any difference here would store different rows than
// plaintext PostgreSQL: the differential tests feed the same input to the
// server directly and through Reader and Writer and compare the stored
// rows.
//
// The data must be UTF-8: the session's client_encoding (or the ENCODING
// option) must be UTF8, which the caller checks. PostgreSQL 18 changed
// how the end-of-data marker \. is read; supporting it means a second
// mode here, chosen by server version.
//
// The package is pure: no I/O, no clocks. Errors are *pgconn.PgError with
// the SQLSTATE the server would use, so the proxy can relay them as they
// are.
package pgcopy
