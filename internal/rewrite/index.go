package rewrite

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// IndexOrdSuffix names the Ord companion of a named index (PlanIndex).
const IndexOrdSuffix = "_ord"

// PlanIndex plans CREATE [UNIQUE] INDEX [CONCURRENTLY] [IF NOT EXISTS]
// [name] ON t [USING method] (...) on the catalog table t (nil: a table
// the proxy does not manage, and the statement is returned unchanged).
// An index that touches no encrypted column is returned unchanged
// (st.SQL). Otherwise the result is one or more CREATE INDEX statements
// separated by "; ", each over the physical columns that serve the
// index's purpose:
//
//   - btree (the default) and hash: each encrypted column is indexed by
//     its Eq onion, c__eq, which serves =, IN, GROUP BY and equi-joins
//     once the onion is peeled to DET (an index built while it is at RND
//     stays valid across peeling, which rewrites the cells). For btree,
//     when every encrypted column of the index also has an Ord onion, a
//     second index maps each of them to c__ord instead, for range
//     predicates, ORDER BY, MIN and MAX once peeled to OPE (an index whose
//     only encrypted columns are INCLUDEd has no companion). It is named
//     name + IndexOrdSuffix and is never UNIQUE (uniqueness is the Eq
//     index's job). Column order, plain columns, ASC/DESC, NULLS
//     FIRST/LAST, INCLUDE, WITH (...), TABLESPACE and predicates over
//     plain columns are kept in both.
//   - gin: the recognisable form of a search index is USING gin (c) or
//     USING gin (c gin_trgm_ops), the way one indexes a text column for
//     LIKE in plain PostgreSQL. Each encrypted column must then have a
//     Search onion and is indexed by its keyword tokens, c__srch (int8[],
//     default array operator class), which serves the LIKE prefilter. It
//     is the only index, so it keeps the given name.
//   - INCLUDE (c) of an encrypted column includes every physical column of
//     c and the row salt, everything the proxy needs to decrypt c, so a
//     covering index stays covering.
//
// A named index gives its name to the first statement; companions get the
// name plus a suffix (the name shortened so the result fits PostgreSQL's
// 63 bytes, rather than letting the server truncate it). Unnamed indexes
// let the server choose names. DROP INDEX name drops only the first; the
// companion must be dropped by its own name.
//
// The statements are independent. They may run as one query string (one
// implicit transaction), except with CONCURRENTLY, which PostgreSQL
// refuses inside a transaction block: the caller must then run each
// statement on its own (Parse splits them).
//
// Refused (SQLSTATE 0A000), because the server cannot do it correctly
// over ciphertexts:
//
//   - UNIQUE over an encrypted column whose Eq onion is not at DET: RND
//     ciphertexts of equal values differ, so duplicates would go
//     undetected; the engine first peels the Eq onion to DET where the
//     policy allows (UniqueIndexNeeds), as UNIQUE or PRIMARY KEY in
//     CREATE TABLE does from the start (a sensitive column never has it);
//   - expression indexes and partial-index predicates that refer to an
//     encrypted column (the server cannot compute over ciphertexts; a
//     parenthesised bare column, ((c)), counts as the column itself, as in
//     PostgreSQL);
//   - an operator class, collation or operator-class options on an
//     encrypted column (other than gin_trgm_ops with gin, and the
//     *_pattern_ops classes, dropped: see patternOps): the server
//     compares ciphertexts as bytea, so they would not mean what they say;
//   - gin over an encrypted column without a Search onion, and access
//     methods other than btree, hash and gin over an encrypted column.
//
// Security: indexes add nothing to what the server learns. An index on an
// onion orders or hashes the ciphertexts the server already stores; what
// it can learn from them is set by the onion's layer, which only peeling
// changes (and which the policy limits). The ord companion is built even
// while the Ord onion is at RND, where it is useless but harmless, so that
// it is ready when the onion is peeled.
func PlanIndex(st Statement, t *catalog.Table) (string, error) {
	is := st.Tree.GetStmt().GetIndexStmt()
	if is == nil {
		return "", fmt.Errorf("rewrite: PlanIndex: not a CREATE INDEX statement (%s)", st.Kind)
	}
	if t == nil {
		return st.SQL, nil
	}
	if err := ddlCheckRelation(is.Relation, t); err != nil {
		return "", err
	}
	table := t.Name
	enc := ddlEncryptedColumns(t)
	if len(enc) == 0 {
		return st.SQL, nil
	}
	method := strings.ToLower(is.AccessMethod)
	if method == "" {
		method = "btree"
	}
	// What the index touches.
	touched := false
	elems := make([]*pg_query.IndexElem, len(is.IndexParams))
	cols := make([]*catalog.Column, len(is.IndexParams)) // encrypted column of each element, or nil
	for i, n := range is.IndexParams {
		e := n.GetIndexElem()
		if e == nil {
			return "", fmt.Errorf("rewrite: CREATE INDEX on %s: unexpected index element", table)
		}
		elems[i] = e
		name := ddlIndexElemColumn(e)
		if name == "" {
			if refs := ddlEncryptedRefs(e.Expr, enc); len(refs) > 0 {
				return "", Refusal("expression index over encrypted column %s.%s is not supported: the server cannot compute expressions over ciphertexts", table, refs[0])
			}
			continue
		}
		if cols[i] = enc[name]; cols[i] != nil {
			touched = true
		}
	}
	if refs := ddlEncryptedRefs(is.WhereClause, enc); len(refs) > 0 {
		return "", Refusal("partial index with a predicate over encrypted column %s.%s is not supported: the server cannot evaluate it over ciphertexts", table, refs[0])
	}
	for _, n := range is.IndexIncludingParams {
		if c := enc[ddlIndexElemColumn(n.GetIndexElem())]; c != nil {
			touched = true
		}
	}
	if !touched {
		return st.SQL, nil
	}
	include, err := ddlIndexInclude(is.IndexIncludingParams, enc)
	if err != nil {
		return "", err
	}

	var out []*pg_query.IndexStmt
	switch method {
	case "btree", "hash":
		for i, c := range cols {
			if c == nil {
				continue
			}
			if len(elems[i].Opclass) > 0 && !patternOps(elems[i].Opclass) || len(elems[i].Collation) > 0 || len(elems[i].Opclassopts) > 0 {
				return "", Refusal("operator class or collation on encrypted column %s.%s in an index is not supported: the server compares its ciphertexts as bytea", table, c.Name)
			}
			if is.Unique {
				if c.Policy == catalog.Sensitive {
					return "", Refusal("UNIQUE index on sensitive column %s.%s: the server could only enforce it on deterministic ciphertexts, which a sensitive column never has", table, c.Name)
				}
				if layer := c.Onions[string(onion.KindEq)]; layer != string(onion.LayerDET) {
					return "", Refusal("UNIQUE index on encrypted column %s.%s: the server can enforce uniqueness only on the deterministic (DET) ciphertexts of its Eq onion, and this column's Eq onion is at %s, whose ciphertexts of equal values differ; declare the column UNIQUE or PRIMARY KEY in CREATE TABLE, which puts its Eq onion at DET", table, c.Name, strings.ToUpper(layer))
				}
			}
		}
		eq, err := ddlIndexOver(is, elems, cols, onion.KindEq, include)
		if err != nil {
			return "", err
		}
		out = append(out, eq)
		if method == "btree" && ddlAllHave(cols, onion.KindOrd) {
			ord, err := ddlIndexOver(is, elems, cols, onion.KindOrd, include)
			if err != nil {
				return "", err
			}
			ord.Unique, ord.NullsNotDistinct = false, false
			ord.Idxname = ddlDerivedName(is.Idxname, IndexOrdSuffix)
			out = append(out, ord)
		}
	case "gin":
		for i, c := range cols {
			if c == nil {
				continue
			}
			if _, ok := c.Onions[string(onion.KindSearch)]; !ok {
				return "", Refusal("gin index on encrypted column %s.%s needs its search capability (a Search onion), which it does not have", table, c.Name)
			}
			e := elems[i]
			opclass := stringList(e.Opclass)
			trgm := len(opclass) > 0 && opclass[len(opclass)-1] == "gin_trgm_ops"
			if len(opclass) > 0 && !trgm || len(e.Collation) > 0 || len(e.Opclassopts) > 0 {
				return "", Refusal("operator class or collation on encrypted column %s.%s in a gin index is not supported: the index is built over its search tokens", table, c.Name)
			}
		}
		srch, err := ddlIndexOver(is, elems, cols, onion.KindSearch, include)
		if err != nil {
			return "", err
		}
		out = append(out, srch)
	default:
		for _, c := range cols {
			if c != nil {
				return "", Refusal("index method %s on encrypted column %s.%s is not supported: use btree (equality and order) or gin (search)", method, table, c.Name)
			}
		}
		return "", Refusal("index method %s including encrypted columns of %s is not supported: use btree (equality and order) or gin (search)", method, table)
	}
	stmts := make([]string, len(out))
	for i, s := range out {
		sql, err := ddlDeparse(st.version, &pg_query.Node{Node: &pg_query.Node_IndexStmt{IndexStmt: s}})
		if err != nil {
			return "", fmt.Errorf("rewrite: deparsing CREATE INDEX on %s: %w", table, err)
		}
		stmts[i] = sql
	}
	return strings.Join(stmts, "; "), nil
}

// patternOps reports whether an operator class is one of the *_pattern_ops
// classes (text, varchar, bpchar), which index a column for LIKE 'prefix%'
// (ORMs create them beside the column's own index). Over an encrypted
// column the index is over its Eq onion like any other: LIKE is the
// search onion's and the proxy's, so the class has nothing to add.
func patternOps(opclass []*pg_query.Node) bool {
	names := stringList(opclass)
	switch names[len(names)-1] {
	case "text_pattern_ops", "varchar_pattern_ops", "bpchar_pattern_ops":
		return true
	}
	return false
}

// UniqueIndexNeeds returns the peels a UNIQUE btree or hash index over
// encrypted columns of t needs: the Eq onion at DET for each column
// whose Eq onion is still at RND, so the server can enforce it (as
// UNIQUE in CREATE TABLE puts it there from the start). The index
// reveals no more than DET does: which rows hold equal values, of which
// it allows none. Sensitive columns and columns without the eq
// capability are left to PlanIndex, which refuses them.
func UniqueIndexNeeds(st Statement, t *catalog.Table) []Need {
	is := st.Tree.GetStmt().GetIndexStmt()
	if is == nil || !is.Unique || t == nil {
		return nil
	}
	if m := strings.ToLower(is.AccessMethod); m != "" && m != "btree" && m != "hash" {
		return nil
	}
	var out []Need
	for _, n := range is.IndexParams {
		c := t.Column(ddlIndexElemColumn(n.GetIndexElem()))
		if c == nil || c.Policy != catalog.Encrypted || !slices.Contains(c.Capabilities, string(onion.KindEq)) {
			continue
		}
		if c.Onions[string(onion.KindEq)] != string(onion.LayerDET) {
			out = append(out, Need{Table: t, Column: c, Kind: onion.KindEq, Layer: onion.LayerDET})
		}
	}
	return out
}

// ddlIndexElemColumn returns the column an index element names: its
// column name, or a parenthesised bare column reference ((c)), which
// PostgreSQL also treats as the column. It is "" for expressions.
func ddlIndexElemColumn(e *pg_query.IndexElem) string {
	if e == nil {
		return ""
	}
	if e.Name != "" {
		return e.Name
	}
	if cr := e.Expr.GetColumnRef(); cr != nil && len(cr.Fields) == 1 {
		return cr.Fields[0].GetString_().GetSval()
	}
	return ""
}

// ddlAllHave reports whether an index has encrypted key columns and each
// of them has an onion of kind k.
func ddlAllHave(cols []*catalog.Column, k onion.Kind) bool {
	found := false
	for _, c := range cols {
		if c == nil {
			continue
		}
		if _, ok := c.Onions[string(k)]; !ok {
			return false
		}
		found = true
	}
	return found
}

// ddlOnionColumn returns the physical column of c's onion of kind k.
func ddlOnionColumn(c *catalog.Column, k onion.Kind) (string, error) {
	_, layout, err := columnLayout(c)
	if err != nil {
		return "", err
	}
	for _, pc := range layout {
		if pc.Kind == k {
			return pc.Name, nil
		}
	}
	return "", fmt.Errorf("rewrite: column %s has no %s onion", c.Name, k)
}

// ddlIndexOver returns a copy of the index with each encrypted column
// replaced by the physical column of its onion of kind k (with operator
// class and collation cleared) and INCLUDE replaced by include.
func ddlIndexOver(is *pg_query.IndexStmt, elems []*pg_query.IndexElem, cols []*catalog.Column, k onion.Kind, include []*pg_query.Node) (*pg_query.IndexStmt, error) {
	out := proto.Clone(is).(*pg_query.IndexStmt)
	out.IndexParams = nil
	for i, e := range elems {
		e = proto.Clone(e).(*pg_query.IndexElem)
		if c := cols[i]; c != nil {
			name, err := ddlOnionColumn(c, k)
			if err != nil {
				return nil, err
			}
			e.Name, e.Expr, e.Opclass, e.Collation, e.Opclassopts = name, nil, nil, nil, nil
		}
		out.IndexParams = append(out.IndexParams, &pg_query.Node{Node: &pg_query.Node_IndexElem{IndexElem: e}})
	}
	out.IndexIncludingParams = include
	return out, nil
}

// ddlIndexInclude maps an INCLUDE list: an encrypted column becomes all
// its physical columns, plus (once) the row salt.
func ddlIndexInclude(params []*pg_query.Node, enc map[string]*catalog.Column) ([]*pg_query.Node, error) {
	var out []*pg_query.Node
	seen := map[string]bool{}
	addName := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, &pg_query.Node{Node: &pg_query.Node_IndexElem{IndexElem: &pg_query.IndexElem{Name: name}}})
		}
	}
	salt := false
	for _, n := range params {
		c := enc[ddlIndexElemColumn(n.GetIndexElem())]
		if c == nil {
			if name := n.GetIndexElem().GetName(); name != "" {
				seen[name] = true
			}
			out = append(out, n)
			continue
		}
		_, layout, err := columnLayout(c)
		if err != nil {
			return nil, err
		}
		for _, pc := range layout {
			addName(pc.Name)
		}
		salt = true
	}
	if salt {
		addName(SaltColumn)
	}
	return out, nil
}

// ddlDerivedName is name+suffix, with name shortened (on a character
// boundary) so the result fits in PostgreSQL's identifier length; "" when
// name is "" (the server then chooses a name).
func ddlDerivedName(name, suffix string) string {
	if name == "" {
		return ""
	}
	for len(name)+len(suffix) > ddlMaxIdentifier {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name + suffix
}
