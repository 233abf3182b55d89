package rewrite

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/onion"
)

// SaltColumn is the physical column holding each row's random salt, from
// which the RND layers derive their IVs.
const SaltColumn = "pgonion_salt"

// physicalPrefix is what the physical columns of an encrypted column are
// named after: the logical name and an underscore, so that onion suffixes
// give owner__eq, owner__ord, owner__add, owner__srch, owner__val. (A rename
// renames these too; keys follow the column id, not the name.)
//
// A name too long for every cell to fit PostgreSQL's identifier limit is
// shortened: the server would truncate its cells to one name (42701) and
// warn about every statement naming them. The prefix is then the name's
// first bytes and 8 hex digits of its SHA-256, so long names sharing a
// beginning still differ; it depends on the name only, so every part of
// the proxy derives the same one.
func physicalPrefix(column string) string {
	if len(column)+1+longestCellSuffix <= ddlMaxIdentifier {
		return column + "_"
	}
	keep := ddlMaxIdentifier - longestCellSuffix - len("_12345678_")
	for keep > 0 && !utf8.RuneStart(column[keep]) {
		keep--
	}
	sum := sha256.Sum256([]byte(column))
	return column[:keep] + "_" + hex.EncodeToString(sum[:4]) + "_"
}

// longestCellSuffix is the longest cell suffix ("_srch", "_salt").
const longestCellSuffix = len(SaltSuffix)

// EqColumn is the server-side column of an encrypted column's Eq onion.
func EqColumn(column string) string { return physicalPrefix(column) + "_eq" }

// OrdColumn is the server-side column of an encrypted column's Ord onion.
func OrdColumn(column string) string { return physicalPrefix(column) + "_ord" }

// StrongestLayer is the layer an onion of kind k starts at.
func StrongestLayer(k onion.Kind) string {
	switch k {
	case onion.KindEq, onion.KindOrd:
		return "rnd"
	case onion.KindAdd:
		return "hom"
	}
	return string(k)
}

// columnLayout returns the type and physical columns of an encrypted
// catalog column.
func columnLayout(c *catalog.Column) (onion.Type, []onion.PhysicalColumn, error) {
	t, err := parseType(c.Type)
	if err != nil {
		return t, nil, err
	}
	var kinds []onion.Kind
	for k := range c.Onions {
		kinds = append(kinds, onion.Kind(k))
	}
	return t, physicalLayout(t, kinds, c.JoinGroup != "", onion.Format(c.CellFormat()), c.Name), nil
}

// PhysicalNames are the names of encrypted column c's cells on the
// server (none when its type does not parse).
func PhysicalNames(c *catalog.Column) []string {
	_, layout, err := columnLayout(c)
	if err != nil {
		return nil
	}
	names := make([]string, len(layout))
	for i, pc := range layout {
		names[i] = pc.Name
	}
	return names
}

// SaltSuffix names the salt override column of an encrypted column
// (owner__salt): NULL while the column's salted cells use the row's salt
// (pgonion_salt), set when an UPDATE wrote the column's cells with a salt
// of its own. UPDATE cannot reuse the row salt, which only the server
// holds, and must not replace it, which would break the row's other
// columns. A NULL costs one bit of the row's null bitmap.
const SaltSuffix = "_salt"

// physicalLayout is onion.Layout followed by the salt override column.
func physicalLayout(t onion.Type, kinds []onion.Kind, joined bool, f onion.Format, column string) []onion.PhysicalColumn {
	prefix := physicalPrefix(column)
	return append(onion.Layout(t, kinds, joined, f, prefix), onion.PhysicalColumn{Name: prefix + SaltSuffix, Suffix: SaltSuffix, SQLType: "bytea"})
}

// SaltOverrideColumn is the server-side salt override column of an
// encrypted column (see SaltSuffix).
func SaltOverrideColumn(column string) string { return physicalPrefix(column) + SaltSuffix }

// parsedTypes memoizes parseType (string -> onion.Type): catalog types
// are read at every execution that computes over a column (a
// read-modify-write at each Bind), and each parse is a call into the
// PostgreSQL parser through cgo, about a sixth of the proxy's CPU under
// pgbench's tpcb-like script. A deployment has few distinct type
// spellings; past parsedTypesMax the rest are parsed each time.
var (
	parsedTypes  sync.Map
	parsedTypesN atomic.Int64
)

const parsedTypesMax = 4096

// parseType reads a type as the catalog stores it (onion.Type.String).
func parseType(s string) (onion.Type, error) {
	if t, ok := parsedTypes.Load(s); ok {
		return t.(onion.Type), nil
	}
	t, err := parseTypeUncached(s)
	if err == nil && parsedTypesN.Load() < parsedTypesMax {
		if _, loaded := parsedTypes.LoadOrStore(s, t); !loaded {
			parsedTypesN.Add(1)
		}
	}
	return t, err
}

func parseTypeUncached(s string) (onion.Type, error) {
	tree, err := pg_query.Parse("SELECT NULL::" + s)
	if err != nil {
		return onion.Type{}, fmt.Errorf("rewrite: bad catalog type %q: %w", s, err)
	}
	tc := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val.GetTypeCast()
	if tc == nil {
		return onion.Type{}, fmt.Errorf("rewrite: bad catalog type %q", s)
	}
	names := typeNames(tc.TypeName)
	if base, ok := serialBase(names[len(names)-1]); ok {
		return onion.TypeFromNames([]string{base}, nil) // a plain serial column's values
	}
	if len(names) == 2 && names[0] == "pg_catalog" && names[1] == "anyenum" && len(tc.TypeName.Typmods) == 2 {
		// catalogType's form of an enum: its name and OID.
		name := tc.TypeName.Typmods[0].GetAConst().GetSval().GetSval()
		c := tc.TypeName.Typmods[1].GetAConst()
		oid := int64(c.GetIval().GetIval())
		if f := c.GetFval(); f != nil { // above 2^31: a float to the parser
			oid, _ = strconv.ParseInt(f.Fval, 10, 64)
		}
		if oid <= 0 || oid > math.MaxUint32 {
			return onion.Type{}, fmt.Errorf("rewrite: bad catalog type %q", s)
		}
		t := onion.EnumType(name, uint32(oid))
		return t, t.Check()
	}
	return typeOf(tc.TypeName)
}

// catalogType is how the catalog records a column's type: as
// onion.Type.String prints it, an enum as pg_catalog.anyenum('name',
// oid), which parseType reads back.
func catalogType(t onion.Type) string {
	if t.Base == onion.Enum {
		return fmt.Sprintf("pg_catalog.anyenum(%s, %d)", quoteString(t.EnumName), t.EnumOID)
	}
	return t.String()
}

// typeOf is the onion.Type of a type name: arrays (of any declared
// dimensions, which PostgreSQL does not enforce) are one-dimensional
// arrays of the element type.
func typeOf(tn *pg_query.TypeName) (onion.Type, error) {
	t, err := onion.TypeFromNames(typeNames(tn), typmods(tn))
	if err != nil || len(tn.ArrayBounds) == 0 {
		return t, err
	}
	return onion.ArrayOf(t)
}

// serialBase is the integer type of a serial pseudo-type name.
func serialBase(name string) (string, bool) {
	switch name {
	case "smallserial", "serial2":
		return "int2", true
	case "serial", "serial4":
		return "int4", true
	case "bigserial", "serial8":
		return "int8", true
	}
	return "", false
}

// ColumnPolicy is what the deployment says about one column.
type ColumnPolicy struct {
	Policy       catalog.Policy
	Capabilities []string // for catalog.Encrypted: nil means the default policy's (see PlanCreate)
	// JoinGroup puts the column in a join group ("" for none; see
	// catalog.ColumnPolicy.JoinGroup). Only an encrypted column with the eq
	// capability can have one.
	JoinGroup string
	// Format is the cell format (onion.Format) of a new encrypted column;
	// 0 means onion.FormatLatest. The columns of a join group must share
	// one: give a new member the format of the group's existing columns.
	Format int
	// GroupKeyVersion is the key version of the join group's columns (0
	// before the group's first rotation): a new member takes it.
	GroupKeyVersion int
	// RootGeneration is the root key generation a new encrypted column's
	// keys derive from: the catalog's, or its join group's.
	RootGeneration int
	// Declared is set for a policy an administrator declared for the
	// column (proxy columns set), as opposed to the deployment's default:
	// only a default gives way to the rules for server-generated values.
	Declared bool
}

// PolicyFunc returns the policy of table.column (schema-qualified table).
type PolicyFunc func(table, column string) ColumnPolicy

// CreatePlan is the rewritten form of CREATE TABLE.
type CreatePlan struct {
	// SQL creates the physical table on the server.
	SQL string
	// Table is what to record in the catalog, in the same transaction.
	Table *catalog.Table
	// Notices say which columns were stored plain although their policy
	// is not, and why (server-generated values, foreign keys to plain
	// columns): the client is told with a NOTICE.
	Notices []string
	// ForeignKeys are the foreign keys from encrypted columns, as
	// statements ALTER TABLE ... ADD ... FOREIGN KEY to plan once the
	// table exists (PlanAlter puts the two sides in one join group).
	ForeignKeys []Statement
}

// PlanCreate rewrites one CREATE TABLE statement. Plain columns keep their
// definition; each encrypted column becomes one column per onion (see
// onion.Layout; named after physicalPrefix), and the table gets the
// per-row salt column.
//
// Decisions:
//   - serial, identity and sequence-default columns are stored plain
//     unless a policy is declared for them (refused when encrypted): the
//     server generates their values, so it knows them; so are columns
//     with a foreign key to a plain column (generated.go);
//   - other DEFAULTs on an encrypted column are applied by the proxy
//     (defaults.go): the server cannot;
//   - PRIMARY KEY and UNIQUE on an encrypted column are enforced on its Eq
//     onion, which therefore starts at DET, not RND: the server learns
//     nothing from equality over values that are all distinct, but it can
//     tell a duplicate insertion attempt (the unique violation);
//   - NOT NULL on an encrypted column applies to its onion columns;
//   - CHECK over encrypted columns is recorded with the table and
//     evaluated by the proxy on every write (check.go); a FOREIGN KEY
//     (REFERENCES) from encrypted columns becomes an ALTER TABLE ... ADD
//     to plan once the table exists (CreatePlan.ForeignKeys); EXCLUDE
//     over encrypted columns is refused;
//   - a stored generated column over encrypted columns is encrypted and
//     computed by the proxy (generation.go); a plain one reading
//     encrypted columns is refused;
//   - a join group (ColumnPolicy.JoinGroup) is recorded in the column's
//     catalog entry; it is refused on a plain or sensitive column, on one
//     without the eq capability, and when its name is not a lowercase
//     identifier (catalog.CheckJoinGroup).
func PlanCreate(st Statement, schema string, policy PolicyFunc) (*CreatePlan, error) {
	return PlanCreateWith(st, schema, policy, nil, nil)
}

// PlanCreateWith is PlanCreate, with refs telling whether the columns that
// foreign keys reference in other tables are plain (nil: not known, and
// the referencing columns keep their policies), and types the domains
// that columns' types name (nil: none known, and such columns must be
// plain).
func PlanCreateWith(st Statement, schema string, policy PolicyFunc, refs RefLookup, types TypeLookup) (*CreatePlan, error) {
	cs := st.Tree.Stmt.GetCreateStmt()
	if cs == nil {
		return nil, fmt.Errorf("rewrite: not a CREATE TABLE statement")
	}
	if cs.Relation.Schemaname != "" {
		schema = cs.Relation.Schemaname
	}
	table := cs.Relation.Relname
	if len(cs.InhRelations) > 0 || cs.Partspec != nil || cs.Partbound != nil || cs.OfTypename != nil {
		return nil, Refusal("CREATE TABLE %s: inheritance, partitioning and typed tables are not supported by the proxy", table)
	}
	if cs.Relation.Relpersistence == "t" {
		return nil, Refusal("CREATE TEMPORARY TABLE %s is not supported by the proxy", table)
	}
	t := &catalog.Table{Schema: schema, Name: table, Physical: table}
	policies, notices, err := createPolicies(cs, schema, table, policy, refs)
	if err != nil {
		return nil, err
	}
	encrypted := map[string]*catalog.Column{}
	// The physical columns, in the order the server stores them: the Ord
	// cells first (the range conditions a scan evaluates on every row
	// read the first columns of the row only), then the row's salt and
	// the salt override columns (NULL but for updated rows: only a bit
	// in the row's null bitmap, and every decrypted cell reads one, so
	// they must not sit behind all the cells: reading a column means
	// walking the row up to it), then the plain columns and the other
	// cells in the logical order, then constraints.
	var front, salts, elts, back []*pg_query.Node
	var fks []Statement // foreign keys from encrypted columns, added once the table exists
	// checks are the CHECKs over encrypted columns, for the proxy.
	var checks []*pg_query.Constraint
	domainChecks := map[*pg_query.Constraint]string{} // the domain of each CHECK that came with one
	pos := 0
	for _, n := range cs.TableElts {
		cd := n.GetColumnDef()
		if cd == nil {
			continue // table constraints: handled below
		}
		pos++
		names := typeNames(cd.TypeName)
		pol := policies[cd.Colname]
		if pol.Policy == catalog.Plain {
			if err := catalog.CheckJoinGroup(pol.JoinGroup, pol.Policy, nil); err != nil {
				return nil, Refusal("column %s.%s: %v", table, cd.Colname, err)
			}
			for _, cn := range cd.Constraints {
				c := cn.GetConstraint()
				if c.Contype != pg_query.ConstrType_CONSTR_CHECK && c.Contype != pg_query.ConstrType_CONSTR_GENERATED {
					continue
				}
				var enc string
				walkColumnRefs(c.RawExpr.ProtoReflect(), func(name string) {
					if p, ok := policies[name]; ok && p.Policy != catalog.Plain && enc == "" {
						enc = name
					}
				})
				if enc == "" {
					continue
				}
				if c.Contype == pg_query.ConstrType_CONSTR_GENERATED {
					return nil, Refusal("plain generated column %s.%s reads encrypted column %s: the server cannot compute it over ciphertexts; leave the generated column encrypted, and the proxy computes it", table, cd.Colname, enc)
				}
				return nil, Refusal("CHECK on plain column %s.%s reads encrypted column %s: the server cannot evaluate it, and the proxy does not know the values the server gives plain columns", table, cd.Colname, enc)
			}
			t.Columns = append(t.Columns, catalog.Column{Position: pos, Name: cd.Colname, Type: deparseType(cd.TypeName), Policy: catalog.Plain})
			elts = append(elts, n)
			continue
		}
		typ, err := typeOf(cd.TypeName)
		if err != nil && types != nil && !isSerial(names) && len(cd.TypeName.ArrayBounds) == 0 {
			u, lerr := types(names)
			if lerr != nil {
				return nil, lerr
			}
			switch {
			case u != nil && u.Domain != nil:
				d := u.Domain
				if cd, err = applyDomain(cd, d, domainChecks); err != nil {
					return nil, err
				}
				if typ, err = typeOf(cd.TypeName); err != nil && d.Enum != nil {
					typ, err = onion.EnumType(d.Enum.Name, d.Enum.OID), nil
				}
				if err != nil {
					err = fmt.Errorf("%w (the base type of domain %s)", err, d.Name)
				}
			case u != nil && u.Enum != nil:
				typ, err = onion.EnumType(u.Enum.Name, u.Enum.OID), nil
			}
		}
		if err != nil {
			return nil, Refusal("type of column %s.%s: %v", table, cd.Colname, err)
		}
		collation, err := columnCollation(cd, typ, table)
		if err != nil {
			return nil, err
		}
		var caps, lazy []string // lazy: allowed, built on first need
		for _, cp := range typ.Capabilities() {
			switch {
			case cp == onion.Ord && typ.OrdIsPrefix():
				// Not by default: the text Ord onion costs an OPE
				// encryption per value and leaks the order of
				// prefixes. Declare it to store it.
				continue
			case cp == onion.Add:
				// Not by default: a Paillier encryption costs
				// milliseconds once the randomizer pool is dry and
				// 768 bytes per value, and on an unmodified server
				// SUM ships every ciphertext anyway, where decrypting
				// the Eq cells in the proxy is cheaper at any row
				// count (README, Performance model). c = c + k is
				// computed by read-modify-write. Declare add to
				// store it.
				continue
			case cp == onion.Search:
				// Allowed, not built: search tokens leak which rows
				// share words and trigrams (equality and frequency)
				// from the first row, whatever layer the Eq onion is
				// at. So the proxy builds them the first time a LIKE
				// could use them, and answers LIKE on decrypted values
				// until then. Declared, they are stored from the start.
				lazy = append(lazy, string(cp))
			}
			caps = append(caps, string(cp))
		}
		if pol.Capabilities != nil {
			lazy = nil
			for _, cp := range pol.Capabilities {
				if !typ.Supports(onion.Capability(cp)) {
					return nil, Refusal("capability %q is not available for column %s.%s of type %s", cp, table, cd.Colname, typ)
				}
			}
			caps = pol.Capabilities
		}
		if collation != "" && collation != "C" && collation != "POSIX" {
			// Under another collation than C the proxy can neither order
			// (Ord onion, OPE) nor case-map (search tokens, ILIKE) as the
			// server would: equality alone, which a deterministic
			// collation (the engine checks) decides byte for byte.
			if pol.Capabilities != nil && !slices.Equal(pol.Capabilities, []string{"eq"}) {
				return nil, Refusal("column %s.%s with COLLATE %q may have the eq capability only: the proxy orders and case-maps text only as the C collation does", table, cd.Colname, collation)
			}
			caps, lazy = []string{"eq"}, nil
		}
		if pol.Policy == catalog.Sensitive {
			// A sensitive column never leaves RND: search tokens and
			// Paillier would expose more than RND, so it keeps only Eq.
			caps = []string{"eq"}
		}
		if err := catalog.CheckJoinGroup(pol.JoinGroup, pol.Policy, append([]string{}, caps...)); err != nil {
			return nil, Refusal("column %s.%s: %v", table, cd.Colname, err)
		}
		col := catalog.Column{Position: pos, Name: cd.Colname, Type: catalogType(typ), Policy: pol.Policy,
			Capabilities: caps, Onions: map[string]string{}, JoinGroup: pol.JoinGroup, Format: int(onion.FormatLatest), Collation: collation}
		if pol.Format != 0 {
			col.Format = pol.Format
		}
		if col.Policy != catalog.Plain {
			col.RootGeneration = pol.RootGeneration
		}
		if col.JoinGroup != "" {
			col.GroupKeyVersion = pol.GroupKeyVersion
		}
		notNull, unique := false, false
		for _, cn := range cd.Constraints {
			c := cn.GetConstraint()
			switch c.Contype {
			case pg_query.ConstrType_CONSTR_NOTNULL:
				notNull = true
			case pg_query.ConstrType_CONSTR_NULL:
			case pg_query.ConstrType_CONSTR_PRIMARY, pg_query.ConstrType_CONSTR_UNIQUE:
				unique = true
				notNull = notNull || c.Contype == pg_query.ConstrType_CONSTR_PRIMARY
			case pg_query.ConstrType_CONSTR_DEFAULT:
				if err := constantDefault(c.RawExpr, &col, typ, table, st.version); err != nil {
					return nil, err
				}
			case pg_query.ConstrType_CONSTR_CHECK:
				checks = append(checks, c)
			case pg_query.ConstrType_CONSTR_GENERATED:
				// Computed by the proxy (generation.go); checked once
				// the table's columns are all known.
				text, err := exprSQL(c.RawExpr, st.version)
				if err != nil {
					return nil, fmt.Errorf("rewrite: deparsing the generation expression of %s.%s: %w", table, cd.Colname, err)
				}
				col.Generation = &text
			case pg_query.ConstrType_CONSTR_IDENTITY:
				return nil, Refusal("%s on encrypted column %s.%s: the server would compute the value in plaintext", constraintName(c.Contype), table, cd.Colname)
			case pg_query.ConstrType_CONSTR_FOREIGN:
				fk := proto.Clone(c).(*pg_query.Constraint)
				fk.FkAttrs = []*pg_query.Node{pg_query.MakeStrNode(cd.Colname)}
				if err := addForeignKey(&fks, cs, fk, st.version); err != nil {
					return nil, err
				}
			default:
				return nil, Refusal("%s on encrypted column %s.%s is not supported", constraintName(c.Contype), table, cd.Colname)
			}
		}
		if cd.RawDefault != nil {
			if err := constantDefault(cd.RawDefault, &col, typ, table, st.version); err != nil {
				return nil, err
			}
		}
		if col.Generation != nil && (HasDefault(&col) || cd.RawDefault != nil || hasConstraint(cd, pg_query.ConstrType_CONSTR_DEFAULT)) {
			return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: fmt.Sprintf("both default and generation expression specified for column %q of table %q", cd.Colname, table)}
		}
		if cd.Identity != "" || cd.Generated != "" && col.Generation == nil {
			return nil, Refusal("a server-side default, identity or generated value on encrypted column %s.%s would be computed in plaintext by the server", table, cd.Colname)
		}
		var kinds []onion.Kind
		for _, cp := range caps {
			if !slices.Contains(lazy, cp) {
				kinds = append(kinds, onion.Kind(cp))
			}
		}
		layout := physicalLayout(typ, kinds, col.JoinGroup != "", onion.Format(col.Format), cd.Colname)
		for _, pc := range layout {
			if pc.Kind != "" {
				col.Onions[string(pc.Kind)] = StrongestLayer(pc.Kind)
			}
		}
		if unique {
			if err := uniqueOnEq(&col, table); err != nil {
				return nil, err
			}
		}
		// NOT NULL on the Eq cell, but for a column with an Add onion:
		// an increment leaves its value there only (the Eq cell NULL),
		// so the constraint is that one of the two is set.
		_, hasAdd := col.Onions[string(onion.KindAdd)]
		eitherCell := notNull && hasAdd && !unique
		if eitherCell {
			back = append(back, NotNullCheck(cd.Colname))
		}
		for _, pc := range layout {
			def := columnDef(pc.Name, pc.SQLType, notNull && !eitherCell && pc.Kind == onion.KindEq)
			switch {
			case pc.Kind == onion.KindOrd:
				front = append(front, def)
			case pc.Suffix == SaltSuffix:
				salts = append(salts, def)
			default:
				elts = append(elts, def)
			}
		}
		if unique {
			back = append(back, uniqueConstraint(columnConstraintName(cd.Constraints, table, []string{cd.Colname}), []string{EqColumn(cd.Colname)}, primaryOf(cd.Constraints)))
		}
		t.Columns = append(t.Columns, col)
		encrypted[cd.Colname] = &t.Columns[len(t.Columns)-1]
	}
	// Table constraints: those over plain columns pass; PRIMARY KEY and
	// UNIQUE move to the Eq onions of encrypted columns; others over
	// encrypted columns are refused.
	for _, n := range cs.TableElts {
		c := n.GetConstraint()
		if c == nil {
			continue
		}
		keys := stringList(c.Keys)
		var enc []string
		for _, k := range keys {
			if encrypted[k] != nil {
				enc = append(enc, k)
			}
		}
		if c.Contype == pg_query.ConstrType_CONSTR_CHECK && len(referencedColumns(n, encrypted)) > 0 {
			checks = append(checks, c)
			continue
		}
		if c.Contype == pg_query.ConstrType_CONSTR_FOREIGN && len(referencedColumns(n, encrypted)) > 0 {
			if err := addForeignKey(&fks, cs, c, st.version); err != nil {
				return nil, err
			}
			continue
		}
		if c.Contype == pg_query.ConstrType_CONSTR_EXCLUSION || c.Contype == pg_query.ConstrType_CONSTR_FOREIGN {
			if cols := referencedColumns(n, encrypted); len(cols) > 0 {
				return nil, Refusal("%s over encrypted column %s.%s is not supported", constraintName(c.Contype), table, cols[0])
			}
			elts = append(elts, n)
			continue
		}
		if len(enc) == 0 {
			elts = append(elts, n)
			continue
		}
		if c.Contype != pg_query.ConstrType_CONSTR_PRIMARY && c.Contype != pg_query.ConstrType_CONSTR_UNIQUE {
			return nil, Refusal("%s over encrypted column %s.%s is not supported", constraintName(c.Contype), table, enc[0])
		}
		phys := make([]string, len(keys))
		for i, k := range keys {
			phys[i] = k
			if col := encrypted[k]; col != nil {
				if err := uniqueOnEq(col, table); err != nil {
					return nil, err
				}
				phys[i] = EqColumn(k)
			}
		}
		name := c.Conname
		if name == "" {
			name = constraintNameFor(table, keys, c.Contype == pg_query.ConstrType_CONSTR_PRIMARY)
		}
		elts = append(elts, uniqueConstraint(name, phys, c.Contype == pg_query.ConstrType_CONSTR_PRIMARY))
	}
	for _, c := range Generated(t) {
		if _, err := PlanGeneration(c, t); err != nil {
			return nil, err
		}
	}
	for _, c := range checks {
		chk, err := checkOf(c, table, st.version, t.Checks)
		if err != nil {
			return nil, err
		}
		chk.Domain = domainChecks[c]
		t.Checks = append(t.Checks, chk)
		if _, err := PlanCheck(chk, t); err != nil {
			return nil, err
		}
	}
	if len(encrypted) == 0 {
		// Nothing to protect: the table is created as the client wrote it.
		return &CreatePlan{SQL: st.SQL, Table: t, Notices: notices}, nil
	}
	cs.TableElts = slices.Concat(front, []*pg_query.Node{saltColumnDef()}, salts, elts, back)
	sql, err := st.Deparse()
	if err != nil {
		return nil, fmt.Errorf("rewrite: deparsing CREATE TABLE %s: %w", table, err)
	}
	return &CreatePlan{SQL: sql, Table: t, Notices: notices, ForeignKeys: fks}, nil
}

// columnCollation returns the collation COLLATE declares for encrypted
// column cd of type typ ("" for none; C and POSIX are kept, as a
// database's default may case-map more than they do); an error for a type
// that has none.
func columnCollation(cd *pg_query.ColumnDef, typ onion.Type, table string) (string, error) {
	cc := cd.CollClause
	if cc == nil {
		return "", nil
	}
	if typ.Base != onion.Text && typ.Base != onion.Varchar && typ.Base != onion.Char {
		return "", &pgconn.PgError{Severity: "ERROR", Code: "42804", Message: fmt.Sprintf("collations are not supported by type %s", typ)}
	}
	coll := stringList(cc.Collname)
	name := coll[len(coll)-1]
	if len(coll) > 1 && coll[0] != "pg_catalog" {
		return "", Refusal("COLLATE %s on encrypted column %s.%s is not supported: only collations of pg_catalog", strings.Join(coll, "."), table, cd.Colname)
	}
	return name, nil // C and POSIX too: the database's own may case-map more
}

// hasConstraint reports whether column cd has a constraint of type ct.
func hasConstraint(cd *pg_query.ColumnDef, ct pg_query.ConstrType) bool {
	return slices.ContainsFunc(cd.Constraints, func(n *pg_query.Node) bool { return n.GetConstraint().GetContype() == ct })
}

// NotNullCheckName names the constraint that stands for NOT NULL on an
// encrypted column with an Add onion (NotNullCheck).
func NotNullCheckName(column string) string {
	return ddlDerivedName("pgonion_not_null_"+column, "")
}

// NotNullCheck is NOT NULL of encrypted column c with an Add onion:
// CHECK (c__eq IS NOT NULL OR c__add IS NOT NULL), named
// NotNullCheckName(c). An increment on the server leaves a row's value in
// its Add cell only, with the Eq cell NULL.
func NotNullCheck(column string) *pg_query.Node {
	isSet := func(cell string) *pg_query.Node {
		return &pg_query.Node{Node: &pg_query.Node_NullTest{NullTest: &pg_query.NullTest{
			Arg:          pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(cell)}, -1),
			Nulltesttype: pg_query.NullTestType_IS_NOT_NULL, Location: -1}}}
	}
	expr := pg_query.MakeBoolExprNode(pg_query.BoolExprType_OR_EXPR, []*pg_query.Node{isSet(EqColumn(column)), isSet(physicalPrefix(column) + "_add")}, -1)
	return &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: &pg_query.Constraint{
		Contype: pg_query.ConstrType_CONSTR_CHECK, Conname: NotNullCheckName(column), RawExpr: expr, InitiallyValid: true, Location: -1}}}
}

// NotNullCheckSQL is NotNullCheck as a table constraint clause.
func NotNullCheckSQL(column string) string {
	id := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	return fmt.Sprintf("CONSTRAINT %s CHECK (%s IS NOT NULL OR %s IS NOT NULL)", id(NotNullCheckName(column)), id(EqColumn(column)), id(physicalPrefix(column)+"_add"))
}

// constantDefault records the DEFAULT of encrypted column col, which the
// proxy applies (defaults.go): a constant as PostgreSQL reads it for the
// column's type (with DateStyle ISO, MDY and TimeZone UTC, the session's
// being unknown here), kept in its text form (Column.Default); an
// expression reading no column as its SQL (Column.DefaultExpr); NULL is
// no default.
func constantDefault(expr *pg_query.Node, col *catalog.Column, typ onion.Type, table string, version int32) error {
	h := Hole{Column: col}
	col.Default, col.DefaultExpr = nil, nil
	if err := holeValue(expr, &h, table, "DEFAULT of"); err != nil || h.Param > 0 {
		return Refusal("DEFAULT on encrypted column %s.%s: only a constant or an expression reading no column is supported (the proxy applies it); the server would compute it in plaintext", table, col.Name)
	}
	if h.Expr != nil {
		text, err := exprSQL(expr, version)
		if err != nil {
			return fmt.Errorf("rewrite: deparsing the DEFAULT of %s.%s: %w", table, col.Name, err)
		}
		col.DefaultExpr = &text
		return nil
	}
	if h.Const == nil {
		return nil
	}
	v, err := typ.ParseText([]byte(*h.Const), onion.Env{})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			return err // as the server reports it
		}
		return &pgconn.PgError{Severity: "ERROR", Code: "22P02", Message: fmt.Sprintf("invalid DEFAULT for column %s.%s of type %s: %v", table, col.Name, typ, err)}
	}
	text := string(typ.AppendText(nil, v, onion.Env{}))
	col.Default = &text
	return nil
}

// uniqueOnEq makes a column's Eq onion start at DET so the server can
// enforce uniqueness, or refuses when the column cannot have one.
func uniqueOnEq(col *catalog.Column, table string) error {
	if t, err := parseType(col.Type); err == nil && t.Base == onion.JSON {
		return &pgconn.PgError{Severity: "ERROR", Code: "42704", Message: `data type json has no default operator class for access method "btree"`}
	}
	if col.Policy == catalog.Sensitive {
		return Refusal("PRIMARY KEY or UNIQUE on sensitive column %s.%s: the server could only enforce it on deterministic ciphertexts, which a sensitive column never has", table, col.Name)
	}
	if !slices.Contains(col.Capabilities, "eq") {
		return Refusal("PRIMARY KEY or UNIQUE on column %s.%s needs its eq capability", table, col.Name)
	}
	col.Onions["eq"] = "det"
	return nil
}

func typeNames(tn *pg_query.TypeName) []string { return stringList(tn.Names) }

func stringList(nodes []*pg_query.Node) []string {
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, n.GetString_().GetSval())
	}
	return out
}

func typmods(tn *pg_query.TypeName) []int32 {
	var out []int32
	for _, m := range tn.Typmods {
		if c := m.GetAConst(); c != nil {
			out = append(out, c.GetIval().GetIval())
		}
	}
	return out
}

func isSerial(names []string) bool {
	switch names[len(names)-1] {
	case "serial", "serial4", "bigserial", "serial8", "smallserial", "serial2":
		return true
	}
	return false
}

func deparseType(tn *pg_query.TypeName) string {
	names := typeNames(tn)
	if len(names) == 2 && names[0] == "pg_catalog" {
		names = names[1:]
	}
	s := strings.Join(names, ".")
	if mods := typmods(tn); len(mods) > 0 {
		parts := make([]string, len(mods))
		for i, m := range mods {
			parts[i] = fmt.Sprint(m)
		}
		s += "(" + strings.Join(parts, ",") + ")"
	}
	for range tn.ArrayBounds {
		s += "[]"
	}
	return s
}

func columnDef(name, typ string, notNull bool) *pg_query.Node {
	var cons []*pg_query.Node
	if notNull {
		cons = append(cons, pg_query.MakeNotNullConstraintNode(-1))
	}
	base := strings.TrimSuffix(typ, "[]")
	if base == "bigint" {
		base = "int8" // the parser's name; "bigint" is only grammar
	}
	tn := &pg_query.TypeName{Names: []*pg_query.Node{pg_query.MakeStrNode(base)}, Typemod: -1}
	if strings.HasSuffix(typ, "[]") {
		tn.ArrayBounds = []*pg_query.Node{pg_query.MakeIntNode(-1)}
	}
	return pg_query.MakeSimpleColumnDefNode(name, tn, cons, -1)
}

// uniqueConstraint is PRIMARY KEY or UNIQUE over physical columns, named
// name: the client's name, or the one PostgreSQL would have chosen for
// the logical columns (constraintNameFor), so that ON CONFLICT ON
// CONSTRAINT and error messages use the names the client expects.
func uniqueConstraint(name string, cols []string, primary bool) *pg_query.Node {
	c := &pg_query.Constraint{Contype: pg_query.ConstrType_CONSTR_UNIQUE, Conname: name, Location: -1}
	if primary {
		c.Contype = pg_query.ConstrType_CONSTR_PRIMARY
	}
	for _, k := range cols {
		c.Keys = append(c.Keys, pg_query.MakeStrNode(k))
	}
	return &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: c}}
}

func primaryOf(cons []*pg_query.Node) bool {
	for _, cn := range cons {
		if cn.GetConstraint().Contype == pg_query.ConstrType_CONSTR_PRIMARY {
			return true
		}
	}
	return false
}

func constraintName(t pg_query.ConstrType) string {
	switch t {
	case pg_query.ConstrType_CONSTR_CHECK:
		return "CHECK"
	case pg_query.ConstrType_CONSTR_FOREIGN:
		return "REFERENCES"
	case pg_query.ConstrType_CONSTR_EXCLUSION:
		return "EXCLUDE"
	case pg_query.ConstrType_CONSTR_DEFAULT:
		return "DEFAULT"
	case pg_query.ConstrType_CONSTR_IDENTITY:
		return "GENERATED AS IDENTITY"
	case pg_query.ConstrType_CONSTR_GENERATED:
		return "GENERATED ALWAYS AS"
	}
	return strings.TrimPrefix(t.String(), "CONSTR_")
}

// referencedColumns returns the encrypted columns a constraint mentions
// (in its keys or anywhere in its expression).
func referencedColumns(n *pg_query.Node, encrypted map[string]*catalog.Column) []string {
	c := n.GetConstraint()
	var out []string
	add := func(name string) {
		if encrypted[name] != nil && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	for _, k := range append(stringList(c.Keys), stringList(c.FkAttrs)...) {
		add(k)
	}
	for _, e := range c.Exclusions {
		walkColumnRefs(e.ProtoReflect(), add)
	}
	if c.RawExpr != nil {
		walkColumnRefs(c.RawExpr.ProtoReflect(), add)
	}
	return out
}

// walkColumnRefs calls f with the last name of every column reference in a
// parse tree. It walks the protobuf structure generically, so no node type
// can hide a reference.
func walkColumnRefs(m protoreflect.Message, f func(string)) {
	inspect(m, func(m protoreflect.Message) bool {
		switch n := m.Interface().(type) {
		case *pg_query.ColumnRef:
			if names := stringList(n.Fields); len(names) > 0 && names[len(names)-1] != "" {
				f(names[len(names)-1])
			}
			return false
		case *pg_query.IndexElem: // index and EXCLUDE elements name columns directly
			if n.Name != "" {
				f(n.Name)
			}
		}
		return true
	})
}

// columnConstraintName is the name of a column's PRIMARY KEY or UNIQUE
// constraint: the one it was given, or PostgreSQL's default.
func columnConstraintName(cons []*pg_query.Node, table string, cols []string) string {
	for _, n := range cons {
		if c := n.GetConstraint(); c != nil && (c.Contype == pg_query.ConstrType_CONSTR_PRIMARY || c.Contype == pg_query.ConstrType_CONSTR_UNIQUE) && c.Conname != "" {
			return c.Conname
		}
	}
	return constraintNameFor(table, cols, primaryOf(cons))
}

// constraintNameFor is the name PostgreSQL gives an unnamed PRIMARY KEY
// (table_pkey) or UNIQUE constraint (table_col1_col2_key) over the logical
// columns, when it fits in 63 bytes; longer names are left to the server
// (which shortens them its own way, over the physical column names).
func constraintNameFor(table string, cols []string, primary bool) string {
	name := table + "_pkey"
	if !primary {
		name = table + "_" + strings.Join(cols, "_") + "_key"
	}
	if len(name) > 63 {
		return ""
	}
	return name
}

// saltColumnDef is the per-row salt column, checked to be exactly one
// salt long. Besides catching bugs, the check makes the server refuse the
// plaintext INSERT a client could send if it reached the physical table
// without the proxy's rewriting (e.g. through a proxy whose catalog copy
// is a moment old): a positional INSERT's first value lands in the salt
// column, and other columns have the onion names no client writes.
func saltColumnDef() *pg_query.Node {
	n := columnDef(SaltColumn, "bytea", true)
	tree, err := pg_query.Parse("SELECT octet_length(" + SaltColumn + ") = " + strconv.Itoa(onion.SaltSize))
	if err != nil {
		panic(err)
	}
	expr := tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val
	cd := n.GetColumnDef()
	cd.Constraints = append(cd.Constraints, &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: &pg_query.Constraint{
		Contype: pg_query.ConstrType_CONSTR_CHECK, RawExpr: expr, InitiallyValid: true, Location: -1}}})
	return n
}

// addForeignKey records foreign key c (a table constraint) of the table
// rel being created as the ALTER TABLE that adds it once the table
// exists: a key from an encrypted column is declared over the Eq cells
// of one join group, which PlanAlter plans.
func addForeignKey(fks *[]Statement, cs *pg_query.CreateStmt, c *pg_query.Constraint, version int32) error {
	rel := cs.Relation
	if pk := c.Pktable; pk != nil && len(c.PkAttrs) == 0 && pk.Relname == rel.Relname && pk.Schemaname == rel.Schemaname {
		// A key to this table's primary key: named, since the server
		// has no table to look it up in yet when the key is planned.
		c = proto.Clone(c).(*pg_query.Constraint)
		for _, k := range primaryKeyOf(cs) {
			c.PkAttrs = append(c.PkAttrs, pg_query.MakeStrNode(k))
		}
	}
	cmd := &pg_query.AlterTableCmd{Subtype: pg_query.AlterTableType_AT_AddConstraint, Behavior: pg_query.DropBehavior_DROP_RESTRICT,
		Def: &pg_query.Node{Node: &pg_query.Node_Constraint{Constraint: c}}}
	alter := &pg_query.AlterTableStmt{Relation: proto.Clone(rel).(*pg_query.RangeVar), Objtype: pg_query.ObjectType_OBJECT_TABLE,
		Cmds: []*pg_query.Node{{Node: &pg_query.Node_AlterTableCmd{AlterTableCmd: cmd}}}}
	sql, err := deparseNode(&pg_query.Node{Node: &pg_query.Node_AlterTableStmt{AlterTableStmt: alter}}, version)
	if err != nil {
		return fmt.Errorf("rewrite: deparsing a foreign key of %s: %w", rel.Relname, err)
	}
	sts, err := Parse(sql)
	if err != nil || len(sts) != 1 {
		return fmt.Errorf("rewrite: reparsing a foreign key of %s: %v", rel.Relname, err)
	}
	*fks = append(*fks, sts[0])
	return nil
}

// primaryKeyOf returns the primary key columns cs declares.
func primaryKeyOf(cs *pg_query.CreateStmt) []string {
	for _, n := range cs.TableElts {
		if cd := n.GetColumnDef(); cd != nil {
			for _, cn := range cd.Constraints {
				if cn.GetConstraint().GetContype() == pg_query.ConstrType_CONSTR_PRIMARY {
					return []string{cd.Colname}
				}
			}
		} else if c := n.GetConstraint(); c.GetContype() == pg_query.ConstrType_CONSTR_PRIMARY {
			return stringList(c.Keys)
		}
	}
	return nil
}
