// Package onion turns the plaintext values of an encrypted column into the
// physical values of its onions, and back, with PostgreSQL's exact input
// and output semantics for the column's type.
//
// # Types and values
//
// A Type is a column's logical type: smallint, integer, bigint,
// numeric[(p,s)], text, varchar[(n)], character(n) (and bpchar without a
// length), date, timestamp, timestamp with time zone, boolean and bytea
// (TypeFromNames maps pg_query type names to it). A Value is a normalized
// plaintext of a Type, the form PostgreSQL stores; the zero Value is NULL.
//
// ParseText and ParseBinary are PostgreSQL 15's input and receive
// functions, followed by the column's typmod in assignment context
// (numeric rounding half away from zero, varchar/character length checks
// with truncation of excess spaces, blank padding); AppendText and
// AppendBinary are its output and send functions (DateStyle ISO,
// bytea_output hex, IntervalStyle irrelevant). They are tested
// differentially against a real server: same output bytes in text and
// binary, or the same SQLSTATE, message, detail and hint. Errors are
// *pgconn.PgError values.
//
// Input that PostgreSQL accepts but this package does not implement is
// refused (IsRefusal reports it, the detail says so): the proxy never
// accepts a value that the server would read differently. Refused today:
//
//   - date/time input that depends on the time of evaluation: now, today,
//     tomorrow, yesterday (SQLSTATE 0A000; the proxy cannot evaluate them
//     exactly as the server would within the transaction);
//   - date/time forms with time zone names or abbreviations other than Z,
//     Zulu, UTC, UT and GMT (America/New_York, CET, EST, POSIX forms such as
//     UTC+3): the meaning of abbreviations depends on the server's
//     timezone_abbreviations setting and of names on its tz database;
//   - Julian days (J2451545), ISO "units" (y2024m02d29), "allballs", the
//     DST modifier "dst", epoch/infinity combined with other fields, fields
//     with a decimal point outside a time (1999.008, 20240229.5), hhmmss-zz
//     run-together times with zones, day-of-year forms whose year is out of
//     the calendar's range (PostgreSQL's arithmetic overflows there);
//   - DateStyle other than ISO output (SQL, Postgres, German): input field
//     order MDY (the default), DMY and YMD are supported;
//   - time zones given as POSIX specifications or numeric offsets in the
//     TimeZone setting (NewEnv, LoadTimeZone): IANA names only.
//
// Everything else, including "Feb 29, 2024", "20240229T123456", BC
// years, fractional seconds rounded half to even as PostgreSQL does,
// 24:00:00, leap second 60, offsets +h, +hhmm, +hh:mm:ss, DST gaps and
// overlaps (a local time in a spring-forward gap is read with the offset
// before the transition, one in a fall-back overlap with the offset after
// it), follows PostgreSQL. Inputs with NUL bytes or invalid UTF-8 are
// rejected with 22021 as the server does for a UTF8 database. The
// semantics are PostgreSQL 15's: PostgreSQL 16 also accepts integers with
// underscores and hexadecimal, octal and binary integer literals, which
// this package rejects as 15 does.
//
// # Onions
//
// A Column (NewColumn) holds the keys of one column, derived from the key
// store's root key with keys.Deriver.Derive(columnID, onion, layer, size):
// ("eq","rnd",32), ("eq","det",64), ("ord","rnd",32), ("ord","ope",32),
// ("search","search",32) and ("val","rnd",32). A column of a join group
// (NewColumnJoined: columns compared with each other on the server, as in
// a.x = b.y or a.d < b.e) takes its DET and OPE keys from the group
// instead, Derive(joinID, "join-eq", "det", 64) and Derive(joinID,
// "join-ord", "ope", 32), with joinID as the DET associated data; its RND,
// Search and Val keys stay its own. EqJoinable and OrdJoinable tell which
// types can share a group. Encrypt gives every onion at its strongest
// layer:
//
//	onion   physical     layers (outer -> inner)  plaintext inside
//	Eq      _eq bytea    RND (AES-CBC) -> DET     EqualityKey(v)
//	                     (AES-SIV, column or      (column id, or join id
//	                     join id AD)              in a join group)
//	Ord     _ord bytea   RND (AES-CBC) -> OPE     order-preserving integer
//	                     (Boldyreva; 8 or 16      form, big-endian fixed
//	                     bytes big-endian)        width; for texts of an
//	                                              8-byte prefix only
//	Add     _add bytea   HOM (Paillier)           integer form
//	Search  _srch int8[] SEARCH (HMAC tokens)     words and trigrams
//	Val     _val bytea   AES-GCM, column id and   binary form (only for
//	                     row salt bound, never    unconstrained numeric and
//	                     peeled                   bpchar without length)
//
// Under FormatCompact (and FormatUUID; see Format), the Eq
// onion of integers, dates, timestamps, booleans and numeric(p,s) with p
// <= 18 outside join groups is compact instead: its DET layer is det.Block
// (AES Key Wrap with Padding, RFC 5649, one 16-byte AES block) of the
// 8-byte integer form, with a key of its own, Derive(id, "eq" or
// "join-eq", "det-block", 32), and its RND layer is AES-CBC without
// padding, so the cell is 16 bytes at either layer (AES-SIV in CBC takes
// 32 at RND and 24 at DET). Columns of FormatSIV, recorded before, keep
// AES-SIV for every type.
//
// Under FormatUUID (the format of new columns), every cell of fixed length
// 16 is a PostgreSQL uuid column instead of a bytea: compact Eq cells, and
// every Ord cell, whose RND layer is then AES-CBC without padding over a
// 16-byte OPE cell (a 32-bit domain's 8-byte ciphertext followed by 0x80
// and seven zero bytes). The server reads fixed-width columns without a
// length header and compares them with memcmp; a scan with range
// predicates over them takes about a fifth less time (see Format).
// Columns of FormatCompact keep bytea cells.
//
// The Eq onion is always present and is the authoritative copy: Decrypt
// reads it (AES-SIV, or det.Block's 64 bits of redundancy, authenticates
// it, so a modified, truncated or moved ciphertext gives ErrDecrypt). EqualityKey makes SQL-equal values equal
// bytes: 1.5 and 1.50 of an unconstrained numeric, or 'ab' and 'ab ' of a
// bpchar, have the same key but print differently. For these two lossy
// types the column also keeps Val, the exact value authenticated with
// AES-GCM, which Decrypt reads (checking that Eq agrees when it is given);
// so equality is supported on unconstrained numeric, at the cost of one
// more column. For numeric(p,s) and character(n) the key loses nothing
// (the scale and the padding come from the type).
//
// The integer forms: integers themselves; date in days and timestamps in
// microseconds since 2000-01-01 (infinities are the extremes of the
// domain, as in PostgreSQL); boolean 0/1; numeric(p,s) as v·10^s, with NaN
// as the largest int64 for Ord (PostgreSQL sorts NaN above all numbers)
// and 2^1100 for Add (a sum at or above 2^1099 decodes as NaN). The Ord
// onion uses the 32-bit OPE domain for smallint, integer, date and boolean
// and the 64-bit one for bigint, timestamps, numeric(p,s) with p <= 18 and
// texts (and for smallint and integer columns of a join group, so that
// integers of all widths compare). Once the RND layer is peeled, comparing
// the bytea values on the server (memcmp order) is comparing the
// plaintexts.
//
// The Ord onion of text, varchar(n) and character(n) ("OPE on a prefix",
// OrdIsPrefix) encrypts the first 8 bytes of the value's UTF-8 bytes (of
// the value without trailing spaces for character types), zero-padded and
// read as a big-endian unsigned integer (top bit flipped into int64). In
// the C collation (byte order; the database uses --locale=C) a < b implies
// prefix(a) <= prefix(b), so range comparisons on the server are a
// superset filter: c < k is sent as c_ord <= OrdOPE(k), c > k as c_ord >=
// OrdOPE(k), and the proxy checks the exact predicate on the decrypted
// values and sorts runs of equal prefixes (Type.Compare). DecryptOrd
// cannot give a text back (ErrOrdPrefix): the proxy decrypts the Eq onion.
//
// # What the server learns
//
//	onion/layer  server can evaluate            server learns
//	any          -                              which values are NULL
//	Eq/RND       nothing                        the length class (16-byte
//	                                            blocks) of the DET ciphertext:
//	                                            nothing for fixed-width types,
//	                                            roughly the length of texts,
//	                                            bytea and numeric digits
//	Eq/DET       =, <>, IN, GROUP BY, DISTINCT, equality and so the frequency
//	             equi-joins within the column   of every value; the exact
//	                                            length of EqualityKey
//	                                            (nothing for compact cells:
//	                                            always 16 bytes)
//	Ord/RND      nothing                        nothing (fixed width)
//	Ord/OPE      <, <=, >, >=, BETWEEN, ORDER   order, equality, frequencies,
//	             BY, MIN, MAX, =                about the upper half of the bits
//	                                            of each value, and distances
//	                                            (Boldyreva et al. 2011)
//	Ord/OPE      prefilters of <, <=, >, >=,    the order of the 8-byte
//	(texts)      BETWEEN, ORDER BY, MIN, MAX    prefixes of the values and
//	             (the proxy checks and breaks   their equality (which rows
//	             ties)                          share a prefix, its
//	                                            frequency), and about the
//	                                            upper half of the bits of
//	                                            each prefix: roughly its
//	                                            first 4 bytes, the first
//	                                            characters of the value
//	Add/HOM      SUM, AVG (product modulo n²)   nothing else (IND-CPA, fixed
//	                                            width); malleable: the server
//	                                            can change sums undetected
//	Search       LIKE/ILIKE prefilter, keyword  which rows share words and
//	             match (@> on the tokens)       trigrams, token frequencies,
//	                                            the number of distinct tokens
//	                                            (about the length in runes)
//	Val          nothing                        the exact length of the binary
//	                                            form of the value
//
// A layer peeled with pgcrypto (PeelKey, rnd.PeelExpr) reveals its key to
// the server, and so the inner layer of every row of that onion.
//
// In a join group the DET and OPE layers of all member columns share
// keys: once peeled, the server also learns equality (and for OPE order)
// across the columns of the group, not only within each column.
//
// # Comparison constants
//
// Constants compared with a column have the column's ComparisonType
// (PostgreSQL gives a literal the base type without modifiers): parse them
// with it, then EqDET gives the DET ciphertext for = and OrdOPE the OPE
// ciphertext for ranges (rounding numeric bounds with more fraction digits
// than the column's scale with Floor or Ceil). Note that comparing a
// character(n) column with a text value (not an untyped literal) makes
// PostgreSQL strip the padding and compare as text: the rewriter has to
// tell these apart: compared as text, a constant with trailing spaces
// equals no character(n) value (EqDET, which reads its argument as bpchar,
// would strip them), and OrdOPEText gives the prefix of a text constant as
// it is. For text types OrdOPE is a superset filter, see OrdIsPrefix.
package onion
