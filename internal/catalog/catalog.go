// Package catalog stores the encrypted schema in the backend database (the
// tables of schema pgonion, created by migration 0002): the logical tables
// and columns the proxy manages, each column's stable random id, type,
// policy and capabilities, the current layer of each of its onions, and its
// join group.
//
// The catalog lives on the untrusted server, so every row is authenticated
// with HMAC-SHA256 under a key derived from the key store (MACKey), and the
// catalog as a whole by its seal (seal.go). Load refuses a catalog in which
// any row was changed, added, removed or replaced by an older copy of
// itself:
//
//   - a column row's MAC covers all its fields and the version of its table;
//   - a table row's MAC covers its fields, its version and the ids of all
//     its columns;
//   - the seal covers the catalog version, the key store binding, every
//     table row's MAC and every declared policy's;
//   - every change bumps the versions and re-authenticates its rows.
//
// What this cannot detect on its own is the replay of a whole older
// catalog with its seal; a proxy that remembers the newest version it has
// seen (Snapshot.Version) refuses that too while it runs.
//
// Warning: names are stored in plaintext. The server's administrators can
// read the logical schema (table and column names, types, policies and
// layers), as in CryptDB: it is needed to run the rewritten queries, and
// the physical column names derive from ids, not names.
package catalog

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/pgonion/pgonion/internal/keys"
)

// ID is the stable random identifier of a table or column. Keys are
// derived from column ids, so renaming a column keeps its keys.
type ID [16]byte

// NewID returns a random ID.
func NewID() ID {
	var id ID
	if _, err := rand.Read(id[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return id
}

// onionLockClass is the first key of OnionLock's advisory locks ("pgop"
// in ASCII).
const onionLockClass = 0x70676f70

// OnionLock returns the advisory lock key (both halves) that serializes
// changes of table id's onion layers (peels, increment marks) with the
// readers whose work depends on them (a rewrite's batches): the changes
// take it exclusively, the readers shared, for their transaction.
func (id ID) OnionLock() (class, key int32) {
	h := fnv.New32a()
	h.Write(id[:])
	return onionLockClass, int32(h.Sum32())
}

// String returns the id as 32 hexadecimal digits.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Policy says how a column is protected.
type Policy string

const (
	// Plain columns are stored unencrypted.
	Plain Policy = "plain"
	// Sensitive columns never go below their RND layer: queries that would
	// need a weaker layer are refused.
	Sensitive Policy = "sensitive"
	// Encrypted columns get the onions of their Capabilities, each at its
	// strongest layer, peeled on demand.
	Encrypted Policy = "encrypted"
)

// Column is one logical column.
type Column struct {
	ID       ID
	Position int    // 1-based order in the logical table
	Name     string // logical name
	Type     string // PostgreSQL type as written in DDL, e.g. "numeric(10,2)"
	Policy   Policy
	// Capabilities are what the server may be asked to compute: a subset
	// of "eq", "ord", "add", "search".
	Capabilities []string
	// Onions maps each onion of the column ("eq", "ord", "add", "search")
	// to its current layer ("rnd", "det", "ope", "hom", ...).
	Onions map[string]string
	// JoinGroup names the columns that share a DET join key ("" for none).
	JoinGroup string
	// Incremented is set once an UPDATE ... SET c = c + k ran on the
	// server over the column's Add onion: rows updated so hold their value
	// only there (their other onions are NULL, stale), so from then on the
	// column may be read and summed, but not compared.
	Incremented bool
	// Format is the version of the column's cell formats (onion.Format),
	// fixed when the column is created: 1 for columns created before
	// formats were recorded (0 reads as 1).
	Format int
	// KeyVersion counts the rotations of the column's keys (proxy keys
	// rotate): its keys derive from KeyID.
	KeyVersion int
	// GroupKeyVersion counts the rotations of the keys of the column's
	// join group, as this column has them: the group's shared keys derive
	// from JoinID. The columns of a group compare only at one version.
	GroupKeyVersion int `json:",omitempty"`
	// RootGeneration is the generation of the key store's root key that
	// the column's keys (and its join group's, as it has them) derive
	// from (keys.Store.DeriverAt).
	RootGeneration int `json:",omitempty"`
	// Default is the value (its text form) the proxy writes, encrypted,
	// into a row that omits the column or gives it DEFAULT: the constant
	// DEFAULT of an encrypted column, which the server cannot apply. nil
	// for none (NULL).
	Default *string `json:",omitempty"`
	// DefaultExpr is the DEFAULT of an encrypted column that is an
	// expression (SQL reading no column: now(), gen_random_uuid()),
	// which the proxy computes for each such row. nil for none; at
	// most one of Default and DefaultExpr is set.
	DefaultExpr *string `json:",omitempty"`
	// Generation is the expression (SQL over the table's logical
	// columns) of a stored generated column the proxy computes: the
	// server cannot, over ciphertexts. nil for an ordinary column.
	Generation *string `json:",omitempty"`
	// Collation is the collation declared for an encrypted text column
	// when it is not C or POSIX ("" for the database's): the proxy
	// orders and case-maps text only as C does, so it refuses to under
	// another collation.
	Collation string `json:",omitempty"`
}

// KeyID is what the column's keys derive from: its id, and from its
// first rotation on (KeyVersion > 0) the key version too.
func (c *Column) KeyID() []byte {
	if c.KeyVersion == 0 {
		return c.ID[:]
	}
	return fmt.Appendf(c.ID[:len(c.ID):len(c.ID)], "/key-version-%d", c.KeyVersion)
}

// JoinID is what the shared keys of the column's join group derive from
// (nil for none): the group's name, and from its first rotation on the
// group's key version too.
func (c *Column) JoinID() []byte {
	if c.JoinGroup == "" {
		return nil
	}
	if c.GroupKeyVersion == 0 {
		return []byte(c.JoinGroup)
	}
	return fmt.Appendf(nil, "%s/group-key-version-%d", c.JoinGroup, c.GroupKeyVersion)
}

// CellFormat is c.Format, with 0 read as 1.
func (c *Column) CellFormat() int { return max(c.Format, 1) }

// Table is one logical table.
type Table struct {
	ID       ID
	Schema   string // logical schema, e.g. "public"
	Name     string
	Physical string // the table on the server (in Schema)
	Version  int64  // bumped on every change to the table or its columns
	Columns  []Column
	// Checks are the CHECK constraints over encrypted columns, which
	// the proxy evaluates on every write (the server cannot).
	Checks []Check `json:",omitempty"`
	// PrimaryKey names the columns of the table's primary key, as the
	// server reports it when the engine looks the table up (not part of
	// the authenticated record: it only lets split execution accept
	// columns that depend on a grouped key, as PostgreSQL does).
	PrimaryKey []string `json:"-"`
}

// Check is a CHECK constraint the proxy enforces.
type Check struct {
	Name string
	// Expr is the constraint's expression, as SQL over the table's
	// logical column names.
	Expr string
	// Domain names the domain whose CHECK this is, over the column of
	// that domain (its VALUE); empty for the table's own.
	Domain string `json:",omitempty"`
}

// newVersion prepares a new table for recording: ids for the table and
// its columns where missing, version 1.
func (t *Table) newVersion() {
	if t.ID == (ID{}) {
		t.ID = NewID()
	}
	for i := range t.Columns {
		if t.Columns[i].ID == (ID{}) {
			t.Columns[i].ID = NewID()
		}
	}
	t.Version = 1
}

// Clone returns a deep copy of t (its columns, their capabilities and
// onion maps).
func (t *Table) Clone() *Table {
	out := *t
	out.Columns = slices.Clone(t.Columns)
	out.Checks = slices.Clone(t.Checks)
	out.PrimaryKey = slices.Clone(t.PrimaryKey)
	for i := range out.Columns {
		c := &out.Columns[i]
		c.Onions = maps.Clone(c.Onions)
		if c.Onions == nil {
			c.Onions = map[string]string{}
		}
		c.Capabilities = slices.Clone(c.Capabilities)
	}
	return &out
}

// Column returns the column named name, or nil.
func (t *Table) Column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// Snapshot is a verified copy of the whole catalog.
type Snapshot struct {
	Version  int64 // the catalog version it was read at
	StoreID  string
	tables   map[string]*Table // by schema + "." + name
	policies []ColumnPolicy    // declared policies, sorted by schema, table, column

	byIDOnce       sync.Once
	byID           map[ID]*Column
	anyIncremented bool
}

// ColumnByID returns the column with id, or nil.
func (s *Snapshot) ColumnByID(id ID) *Column {
	if s == nil {
		return nil
	}
	s.index()
	return s.byID[id]
}

// AnyIncremented reports whether a column of s is Incremented.
func (s *Snapshot) AnyIncremented() bool {
	if s == nil {
		return false
	}
	s.index()
	return s.anyIncremented
}

// index makes s's index of columns by ID, once.
func (s *Snapshot) index() {
	s.byIDOnce.Do(func() {
		s.byID = map[ID]*Column{}
		for _, t := range s.tables {
			for i := range t.Columns {
				s.byID[t.Columns[i].ID] = &t.Columns[i]
				s.anyIncremented = s.anyIncremented || t.Columns[i].Incremented
			}
		}
	})
}

// Table returns the table schema.name, or nil when the proxy does not
// manage it.
func (s *Snapshot) Table(schema, name string) *Table { return s.tables[schema+"."+name] }

// Tables returns every table, sorted by schema and name.
func (s *Snapshot) Tables() []*Table {
	names := slices.Sorted(maps.Keys(s.tables))
	out := make([]*Table, len(names))
	for i, n := range names {
		out[i] = s.tables[n]
	}
	return out
}

// ErrTampered is returned when a catalog row does not authenticate.
var ErrTampered = errors.New("catalog: metadata was modified outside the proxy")

// MACKey derives the catalog's authentication key from the key store.
func MACKey(d *keys.Deriver) ([]byte, error) {
	return d.Derive([]byte("pgonion catalog"), "catalog", "mac", 32)
}

// Querier is what Load needs: a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Execer is what the writing functions need: a transaction.
type Execer interface {
	Querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Version returns the current catalog version (cheap: one row).
func Version(ctx context.Context, q Querier) (int64, error) {
	var v int64
	err := q.QueryRow(ctx, "SELECT version FROM pgonion.catalog_version").Scan(&v)
	return v, err
}

// Load reads and verifies the whole catalog: every row, and the catalog
// as a whole under its seal.
func Load(ctx context.Context, q Querier, macKey []byte) (*Snapshot, error) {
	for attempt := 1; ; attempt++ {
		s, seal, err := load(ctx, q, macKey)
		if err == nil {
			err = s.checkSeal(macKey, seal)
		}
		if err == nil {
			return s, nil
		}
		// Outside a repeatable-read transaction each read has its own
		// snapshot: a change committed between two of them looks like
		// tampering. Read again; tampering fails every time.
		if attempt == loadAttempts || !(errors.Is(err, ErrTampered) || errors.Is(err, ErrUnsealed)) {
			return nil, err
		}
	}
}

// loadAttempts bounds Load's reads of a catalog that does not verify.
const loadAttempts = 3

// load reads the catalog and verifies its rows one by one; it returns the
// stored seal (nil when there is none) for the caller to check.
func load(ctx context.Context, q Querier, macKey []byte) (*Snapshot, []byte, error) {
	s := &Snapshot{tables: map[string]*Table{}}
	var seal []byte
	if err := q.QueryRow(ctx, "SELECT version, seal FROM pgonion.catalog_version").Scan(&s.Version, &seal); err != nil {
		return nil, nil, fmt.Errorf("catalog: reading version: %w", err)
	}
	var store *string
	if err := q.QueryRow(ctx, "SELECT (SELECT store_id::text FROM pgonion.keystore)").Scan(&store); err != nil {
		return nil, nil, fmt.Errorf("catalog: reading key store binding: %w", err)
	}
	if store != nil {
		s.StoreID = *store
	}
	byID := map[ID]*Table{}
	macs := map[ID][]byte{}
	// checks through to_jsonb: migration 0009 loads the catalog before
	// 0017 adds it.
	rows, err := q.Query(ctx, "SELECT table_id, schema_name, table_name, physical_name, version, to_jsonb(t) -> 'checks', mac FROM pgonion.tables t")
	if err != nil {
		return nil, nil, fmt.Errorf("catalog: reading tables: %w", err)
	}
	for rows.Next() {
		t := &Table{}
		var mac []byte
		if err := rows.Scan(&t.ID, &t.Schema, &t.Name, &t.Physical, &t.Version, &t.Checks, &mac); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("catalog: reading tables: %w", err)
		}
		byID[t.ID], macs[t.ID] = t, mac
		s.tables[t.Schema+"."+t.Name] = t
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("catalog: reading tables: %w", err)
	}
	// key_version and default_value through to_jsonb: migration 0009
	// loads the catalog before 0013 and 0014 add those columns.
	rows, err = q.Query(ctx, `SELECT column_id, table_id, position, column_name, type_name, policy,
		capabilities, onions, coalesce(join_group, ''), incremented, cell_format, coalesce((to_jsonb(c) ->> 'key_version')::int, 0),
		to_jsonb(c) ->> 'default_value', coalesce((to_jsonb(c) ->> 'group_key_version')::int, 0),
		coalesce((to_jsonb(c) ->> 'root_generation')::int, 0), to_jsonb(c) ->> 'generation', coalesce(to_jsonb(c) ->> 'collation_name', ''),
		to_jsonb(c) ->> 'default_expr', mac
		FROM pgonion.columns c ORDER BY table_id, position`)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog: reading columns: %w", err)
	}
	for rows.Next() {
		var c Column
		var tableID ID
		var mac []byte
		if err := rows.Scan(&c.ID, &tableID, &c.Position, &c.Name, &c.Type, &c.Policy,
			&c.Capabilities, &c.Onions, &c.JoinGroup, &c.Incremented, &c.Format, &c.KeyVersion, &c.Default, &c.GroupKeyVersion, &c.RootGeneration, &c.Generation, &c.Collation, &c.DefaultExpr, &mac); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("catalog: reading columns: %w", err)
		}
		t := byID[tableID]
		if t == nil {
			rows.Close()
			return nil, nil, fmt.Errorf("%w: column %s belongs to no table", ErrTampered, c.ID)
		}
		if !hmac.Equal(mac, columnMAC(macKey, t, &c)) {
			rows.Close()
			return nil, nil, fmt.Errorf("%w: column %s.%s.%s does not authenticate", ErrTampered, t.Schema, t.Name, c.Name)
		}
		t.Columns = append(t.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("catalog: reading columns: %w", err)
	}
	for id, t := range byID {
		if !hmac.Equal(macs[id], tableMAC(macKey, t)) {
			return nil, nil, fmt.Errorf("%w: table %s.%s (or its set of columns) does not authenticate", ErrTampered, t.Schema, t.Name)
		}
	}
	if s.policies, err = loadPolicies(ctx, q, macKey); err != nil {
		return nil, nil, err
	}
	return s, seal, nil
}

// BindKeyStore records which key store the database's encrypted data
// belongs to, or checks that it is storeID when one is recorded already.
// A new binding authenticates the catalog under the first root key
// generation (BindKeyStoreAt gives another).
func BindKeyStore(ctx context.Context, tx Execer, macKey []byte, storeID string) error {
	return BindKeyStoreAt(ctx, tx, macKey, storeID, 0)
}

// BindKeyStoreAt is BindKeyStore for a key store whose root key is of
// generation gen: macKey must be its catalog key.
func BindKeyStoreAt(ctx context.Context, tx Execer, macKey []byte, storeID string, gen int) error {
	var have *string
	if err := tx.QueryRow(ctx, "SELECT (SELECT store_id::text FROM pgonion.keystore FOR UPDATE)").Scan(&have); err != nil {
		return err
	}
	switch {
	case have == nil:
		return change(ctx, tx, macKey, func() error {
			_, err := tx.Exec(ctx, "INSERT INTO pgonion.keystore (store_id, mac_generation) VALUES ($1, $2)", storeID, gen)
			return err
		})
	case !strings.EqualFold(*have, storeID):
		return fmt.Errorf("catalog: the encrypted data in this database belongs to key store %s, not to %s\n"+
			"hint: start the proxy with the key store (and master key) that encrypted this data", *have, storeID)
	}
	return nil
}

// CreateTable records a new table (t.ID, t.Version and the column ids are
// filled in when zero) in tx.
func CreateTable(ctx context.Context, tx Execer, macKey []byte, t *Table) error {
	return change(ctx, tx, macKey, func() error {
		t.newVersion()
		if _, err := tx.Exec(ctx, "INSERT INTO pgonion.tables (table_id, schema_name, table_name, physical_name, version, checks, mac) VALUES ($1, $2, $3, $4, $5, $6, $7)",
			t.ID, t.Schema, t.Name, t.Physical, t.Version, checksJSON(t), tableMAC(macKey, t)); err != nil {
			return fmt.Errorf("catalog: recording table %s.%s: %w", t.Schema, t.Name, err)
		}
		for i := range t.Columns {
			if err := insertColumn(ctx, tx, macKey, t, &t.Columns[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// UpdateTable replaces the stored form of t (its columns may have been
// added, removed, renamed or changed) and bumps its version. t.Version must
// be the version it was loaded at: a concurrent change makes it fail.
func UpdateTable(ctx context.Context, tx Execer, macKey []byte, t *Table) error {
	return change(ctx, tx, macKey, func() error { return updateTable(ctx, tx, macKey, t) })
}

func updateTable(ctx context.Context, tx Execer, macKey []byte, t *Table) error {
	for i := range t.Columns {
		if t.Columns[i].ID == (ID{}) {
			t.Columns[i].ID = NewID()
		}
	}
	next := t.Version + 1
	old := t.Version
	t.Version = next
	tag, err := tx.Exec(ctx, "UPDATE pgonion.tables SET schema_name = $2, table_name = $3, physical_name = $4, version = $5, checks = $6, mac = $7 WHERE table_id = $1 AND version = $8",
		t.ID, t.Schema, t.Name, t.Physical, t.Version, checksJSON(t), tableMAC(macKey, t), old)
	if err != nil {
		t.Version = old
		return fmt.Errorf("catalog: updating table %s.%s: %w", t.Schema, t.Name, err)
	}
	if tag.RowsAffected() != 1 {
		t.Version = old
		return fmt.Errorf("catalog: table %s.%s was changed concurrently (expected version %d)", t.Schema, t.Name, old)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM pgonion.columns WHERE table_id = $1", t.ID); err != nil {
		return err
	}
	for i := range t.Columns {
		if err := insertColumn(ctx, tx, macKey, t, &t.Columns[i]); err != nil {
			return err
		}
	}
	return nil
}

// DropTable removes a table and its columns.
func DropTable(ctx context.Context, tx Execer, macKey []byte, id ID) error {
	return change(ctx, tx, macKey, func() error {
		_, err := tx.Exec(ctx, "DELETE FROM pgonion.tables WHERE table_id = $1", id)
		return err
	})
}

func insertColumn(ctx context.Context, tx Execer, macKey []byte, t *Table, c *Column) error {
	var jg *string
	if c.JoinGroup != "" {
		jg = &c.JoinGroup
	}
	caps := c.Capabilities
	if caps == nil {
		caps = []string{}
	}
	onions := c.Onions
	if onions == nil {
		onions = map[string]string{}
	}
	_, err := tx.Exec(ctx, `INSERT INTO pgonion.columns (column_id, table_id, position, column_name, type_name, policy,
		capabilities, onions, join_group, incremented, cell_format, key_version, default_value, group_key_version, root_generation, generation, collation_name, default_expr, mac) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
		c.ID, t.ID, c.Position, c.Name, c.Type, string(c.Policy), caps, onions, jg, c.Incremented, c.CellFormat(), c.KeyVersion, c.Default, c.GroupKeyVersion, c.RootGeneration, c.Generation, nullIfEmpty(c.Collation), c.DefaultExpr, columnMAC(macKey, t, c))
	if err != nil {
		return fmt.Errorf("catalog: recording column %s.%s.%s: %w", t.Schema, t.Name, c.Name, err)
	}
	return nil
}

// mac is HMAC-SHA256 over length-prefixed fields, so distinct field lists
// never encode alike.
type mac struct{ b []byte }

func (m *mac) str(s string) *mac {
	m.b = binary.BigEndian.AppendUint32(m.b, uint32(len(s)))
	m.b = append(m.b, s...)
	return m
}

func (m *mac) int(v int64) *mac {
	m.b = binary.BigEndian.AppendUint64(m.b, uint64(v))
	return m
}

func (m *mac) sum(key []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(m.b)
	return h.Sum(nil)
}

func tableMAC(key []byte, t *Table) []byte {
	m := (&mac{}).str("pgonion table v1").str(string(t.ID[:])).str(t.Schema).str(t.Name).str(t.Physical).int(t.Version)
	ids := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		ids[i] = string(c.ID[:])
	}
	slices.Sort(ids)
	m.int(int64(len(ids)))
	for _, id := range ids {
		m.str(id)
	}
	if len(t.Checks) > 0 {
		// Only when there are any, so tables keep the MAC they had.
		m.str("checks").int(int64(len(t.Checks)))
		for _, c := range t.Checks {
			m.str(c.Name).str(c.Expr)
			if c.Domain != "" {
				// No name has a NUL: the marker cannot be a check's.
				m.str("\x00domain").str(c.Domain)
			}
		}
	}
	return m.sum(key)
}

func columnMAC(key []byte, t *Table, c *Column) []byte {
	m := (&mac{}).str("pgonion column v1").str(string(c.ID[:])).str(string(t.ID[:])).int(t.Version).
		int(int64(c.Position)).str(c.Name).str(c.Type).str(string(c.Policy)).str(c.JoinGroup)
	m.int(int64(len(c.Capabilities)))
	for _, cp := range c.Capabilities {
		m.str(cp)
	}
	kinds := slices.Sorted(maps.Keys(c.Onions))
	m.int(int64(len(kinds)))
	for _, k := range kinds {
		m.str(k).str(c.Onions[k])
	}
	if c.Incremented {
		// Only when set, so columns keep the MAC they had before the flag
		// existed.
		m.str("incremented")
	}
	if f := c.CellFormat(); f != 1 {
		// Likewise only from format 2 on.
		m.str("format").int(int64(f))
	}
	if c.KeyVersion != 0 {
		// And from the first rotation on.
		m.str("key version").int(int64(c.KeyVersion))
	}
	if c.Default != nil {
		m.str("default").str(*c.Default)
	}
	if c.GroupKeyVersion != 0 {
		m.str("group key version").int(int64(c.GroupKeyVersion))
	}
	if c.RootGeneration != 0 {
		m.str("root generation").int(int64(c.RootGeneration))
	}
	if c.Generation != nil {
		m.str("generation").str(*c.Generation)
	}
	if c.Collation != "" {
		m.str("collation").str(c.Collation)
	}
	if c.DefaultExpr != nil {
		m.str("default expression").str(*c.DefaultExpr)
	}
	return m.sum(key)
}

// ScanUUID and UUIDValue let pgx read and write an ID as a uuid.
func (id *ID) ScanUUID(v pgtype.UUID) error {
	if !v.Valid {
		return errors.New("catalog: NULL id")
	}
	*id = v.Bytes
	return nil
}

func (id ID) UUIDValue() (pgtype.UUID, error) { return pgtype.UUID{Bytes: id, Valid: true}, nil }

// CreateTableSQL returns SQL statements (separated by semicolons, with
// every value as a literal) that record t like CreateTable does, so that
// the proxy can run them in the same statement as the client's DDL (e.g.
// inside one DO block): the DDL and its metadata then commit or fail
// together. t.ID, t.Version and the column ids are filled in. The caller
// seals the resulting catalog (SealSQL) in the same block.
func CreateTableSQL(macKey []byte, t *Table) string {
	t.newVersion()
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO pgonion.tables (table_id, schema_name, table_name, physical_name, version, checks, mac) VALUES (%s, %s, %s, %s, %d, %s, %s);\n",
		uuidLit(t.ID), quote(t.Schema), quote(t.Name), quote(t.Physical), t.Version, checksLit(t), byteaLit(tableMAC(macKey, t)))
	writeColumnsSQL(&b, macKey, t)
	return b.String()
}

// UpdateTableSQL is the literal form of UpdateTable, for a PL/pgSQL block
// (it uses IF and RAISE): it fails with SQLSTATE 40001 when the table was
// changed since t.Version. t.Version is advanced and new column ids are
// filled in. The caller seals the resulting catalog (SealSQL).
func UpdateTableSQL(macKey []byte, t *Table) string {
	for i := range t.Columns {
		if t.Columns[i].ID == (ID{}) {
			t.Columns[i].ID = NewID()
		}
	}
	old := t.Version
	t.Version++
	var b strings.Builder
	fmt.Fprintf(&b, "UPDATE pgonion.tables SET schema_name = %s, table_name = %s, physical_name = %s, version = %d, checks = %s, mac = %s WHERE table_id = %s AND version = %d;\n",
		quote(t.Schema), quote(t.Name), quote(t.Physical), t.Version, checksLit(t), byteaLit(tableMAC(macKey, t)), uuidLit(t.ID), old)
	fmt.Fprintf(&b, "IF NOT FOUND THEN RAISE EXCEPTION 'table %%.%% was changed concurrently by another proxy', %s, %s USING ERRCODE = '40001'; END IF;\n", quote(t.Schema), quote(t.Name))
	fmt.Fprintf(&b, "DELETE FROM pgonion.columns WHERE table_id = %s;\n", uuidLit(t.ID))
	writeColumnsSQL(&b, macKey, t)
	return b.String()
}

// DropTableSQL is the literal form of DropTable (the caller seals).
func DropTableSQL(id ID) string {
	return fmt.Sprintf("DELETE FROM pgonion.tables WHERE table_id = %s;\n", uuidLit(id))
}

func writeColumnsSQL(b *strings.Builder, macKey []byte, t *Table) {
	for i := range t.Columns {
		c := &t.Columns[i]
		caps := make([]string, len(c.Capabilities))
		for j, cp := range c.Capabilities {
			caps[j] = quote(cp)
		}
		onions := "{}"
		if len(c.Onions) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(c.Onions)) {
				parts = append(parts, jsonString(k)+": "+jsonString(c.Onions[k]))
			}
			onions = "{" + strings.Join(parts, ", ") + "}"
		}
		jg := "NULL"
		if c.JoinGroup != "" {
			jg = quote(c.JoinGroup)
		}
		def := "NULL"
		if c.Default != nil {
			def = quote(*c.Default)
		}
		gen, coll, defx := "NULL", "NULL", "NULL"
		if c.Generation != nil {
			gen = quote(*c.Generation)
		}
		if c.DefaultExpr != nil {
			defx = quote(*c.DefaultExpr)
		}
		if c.Collation != "" {
			coll = quote(c.Collation)
		}
		fmt.Fprintf(b, "INSERT INTO pgonion.columns (column_id, table_id, position, column_name, type_name, policy, capabilities, onions, join_group, incremented, cell_format, key_version, default_value, group_key_version, root_generation, generation, collation_name, default_expr, mac) VALUES (%s, %s, %d, %s, %s, %s, ARRAY[%s]::text[], %s::jsonb, %s, %t, %d, %d, %s, %d, %d, %s, %s, %s, %s);\n",
			uuidLit(c.ID), uuidLit(t.ID), c.Position, quote(c.Name), quote(c.Type), quote(string(c.Policy)),
			strings.Join(caps, ", "), quote(onions), jg, c.Incremented, c.CellFormat(), c.KeyVersion, def, c.GroupKeyVersion, c.RootGeneration, gen, coll, defx, byteaLit(columnMAC(macKey, t, c)))
	}
}

// checksJSON is the stored form of t's checks: nil (NULL) for none.
func checksJSON(t *Table) []byte {
	if len(t.Checks) == 0 {
		return nil
	}
	b, err := json.Marshal(t.Checks)
	if err != nil {
		panic(err) // impossible: strings only
	}
	return b
}

// checksLit is checksJSON as a SQL literal.
func checksLit(t *Table) string {
	b := checksJSON(t)
	if b == nil {
		return "NULL"
	}
	return quote(string(b)) + "::jsonb"
}

// nullIfEmpty is s, or NULL for "".
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// quote is a SQL string literal (standard_conforming_strings on).
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func uuidLit(id ID) string {
	h := id.String()
	return "'" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:] + "'::uuid"
}

func byteaLit(b []byte) string { return "'\\x" + hex.EncodeToString(b) + "'::bytea" }

// jsonString is a JSON string for the catalog's short, printable names.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// MarkIncrementedSQL returns a PL/pgSQL block that records in the catalog
// the first increment of the columns of marked (t as base has it, with
// Incremented set on more columns), sealed as next = base with marked.
// The block is meant to run inside the incrementing statement's own
// transaction: it locks the catalog, does nothing when another
// transaction recorded the same increments first, and fails with 40001
// when the catalog changed otherwise. marked.Version is advanced.
func MarkIncrementedSQL(key []byte, base *Snapshot, marked *Table) (body string, next *Snapshot, err error) {
	cur := base.TableByID(marked.ID)
	if cur == nil {
		return "", nil, fmt.Errorf("catalog: table %s.%s is not in the catalog", marked.Schema, marked.Name)
	}
	var ids []string
	for _, c := range marked.Columns {
		if !c.Incremented {
			continue
		}
		if old := cur.Column(c.Name); old == nil || old.ID != c.ID {
			return "", nil, fmt.Errorf("catalog: column %s.%s changed", marked.Name, c.Name)
		} else if !old.Incremented {
			ids = append(ids, uuidLit(c.ID))
		}
	}
	if len(ids) == 0 {
		return "", base, nil
	}
	var b strings.Builder
	b.WriteString("PERFORM 1 FROM pgonion.catalog_version FOR UPDATE;\n")
	fmt.Fprintf(&b, "IF NOT EXISTS (SELECT 1 FROM pgonion.columns WHERE column_id IN (%s) AND NOT incremented) THEN RETURN; END IF;\n", strings.Join(ids, ", "))
	b.WriteString(UpdateTableSQL(key, marked))
	next = base.WithTable(marked)
	b.WriteString(SealSQL(key, next, base.Version))
	return b.String(), next, nil
}
