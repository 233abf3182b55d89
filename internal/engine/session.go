package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/pgonion/pgonion/internal/catalog"
	"github.com/pgonion/pgonion/internal/rewrite"
	"github.com/pgonion/pgonion/internal/shape"
	"github.com/pgonion/pgonion/internal/wire"
)

// session is the Interceptor of one client session. Query and Parse run on
// the session's client-reading goroutine; result rewriters run on its
// server-reading goroutine.
type session struct {
	e      *Engine
	params sessionParams

	// splitNotRekey is set while a statement that needs columns re-keyed
	// is planned again for split execution instead (plan).
	splitNotRekey bool

	// txCat is the catalog as this session's open transaction has it:
	// the shared catalog plus the DDL (CREATE, ALTER, DROP TABLE) this
	// session planned in statements whose transaction has not ended.
	// Until the shared catalog shows that DDL, this session plans with it
	// (a CREATE TABLE, then an INSERT in the same query string, pipeline
	// or transaction block), and further DDL seals on top of it. It may
	// turn out wrong (the DDL failed or was rolled back): that only makes
	// statements fail, never leak. nil when there is none.
	//
	// It is settled (the shared catalog made current, then txCat
	// dropped) once every DDL planned is answered and the session is idle
	// outside a transaction: before the client sees that ReadyForQuery,
	// so a statement the client (or anyone it tells) sends next, through
	// any session of this proxy, is planned with the committed DDL.
	mu          sync.Mutex
	txCat       *catalog.Snapshot
	ddlInFlight int  // DDL planned but not yet answered by the server
	lastStatus  byte // of the last ReadyForQuery
	// backendPID is the session's server backend (wire.SessionInfo).
	backendPID uint32
	intents    []int64 // this session's intents (lease.go), dropped when txCat settles
	txGen      uint64  // counts changes of txCat (PlanEpoch)

	// writing counts, per table, this session's writes holding the
	// table's write gate (holdWrites); guarded by mu.
	writing map[catalog.ID]int
	// txGates are the write gates of the tables this session's open
	// transaction peeled (peelInTx), released when txCat settles.
	txGates []*writeGate
	// savepoints are the client's savepoints in its open transaction,
	// oldest first (savepoint.go); guarded by mu.
	savepoints []savepoint
	// deferFn is wire.SessionInfo.Defer; nil outside a wire session.
	deferFn func(func())
	// exec is wire.SessionInfo.Exec; nil outside a wire session.
	exec func(sql string, rw wire.ResultRewriter, args ...[]byte) error
	// execQuery runs a statement with parameters ahead of the client's,
	// also at Bind (wire.SessionInfo.ExecQuery).
	execQuery func(q wire.SideQuery, rw wire.ResultRewriter) error
	// twin is the DO-block fragment that applies the ALTER TABLE being
	// planned to the table's twin (logical.go), during planAlter.
	twin string
	// twinOff suppresses twin fragments (a CREATE TABLE's own keys).
	twinOff bool
	// describeQuery types a statement's parameters on the server (and
	// gives rw its RowDescription).
	describeQuery func(sql string, oids []uint32, rw wire.ResultRewriter) ([]uint32, error)
	// txEpoch is wire.SessionInfo.TxEpoch (nil without a wire session).
	txEpoch func() (epoch uint64, settled bool)
	// txClock is the server's transaction start, read with a statement
	// the proxy ran at a transaction epoch (clock.go); client goroutine
	// only.
	txClock knownClock
	// using counts this session's statements in flight per table, and
	// txTables holds the tables its transaction named (switch.go).
	using    map[string]int
	txTables map[string]bool
	// planKeys collects the tables (schema.name) the statement being
	// planned names, and planReleases ends their counts (use).
	planKeys     []string
	planReleases []func()
	// aheadOK is set while the statement being planned may run
	// statements of its own ahead of it (Exec): the first statement of a
	// simple-protocol Query, or a Parse (where Exec may still refuse).
	aheadOK bool
	// aheadAlone is set with aheadOK when the statement is the query
	// string's only one: what runs ahead may then hold its transaction
	// open for it (wire.SideQuery.Hold).
	aheadAlone bool
	// cursors are the projections of the cursors declared over
	// encrypted columns, by name (cursor.go).
	cursors map[string]*projection
	// held are the cursors whose rows the proxy computes (heldcursor.go).
	held map[string]*heldCursor
	// plans are the extended protocol's plans by statement
	// (plancache.go); guarded by mu.
	plans map[planKey]*cachedPlan
	// literalShapes are the shapes of simple-protocol statements planned
	// with their literals, at the catalog version given (shapequery.go);
	// only the client goroutine reads it.
	literalShapes map[planKey]int64
	// shapeRefs memoizes shape.Refs of the server statements of shapes
	// (refsOf); only the client goroutine reads it.
	shapeRefs map[string][]shape.Ref
}

// ParameterStatus implements wire.ParameterObserver.
func (s *session) ParameterStatus(name, value string) { s.params.set(name, value) }

// PlanEpoch implements wire.Replanner: the shared catalog's epoch, and
// how often this session's own catalog (txCat) changed.
func (s *session) PlanEpoch() uint64 {
	s.mu.Lock()
	gen := s.txGen
	s.mu.Unlock()
	return s.e.cat.epoch.Load()*1_000_003 + gen
}

// ReadyForQuery implements wire.TransactionObserver.
func (s *session) ReadyForQuery(txStatus byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastStatus = txStatus
	if txStatus == 'I' {
		clear(s.txTables)
		s.savepoints = nil
	}
	s.maybeSettleLocked()
}

// ddlBase returns the catalog a DDL statement of this session builds on
// (and seals the result of): txCat, else the shared catalog made current.
func (s *session) ddlBase() (*catalog.Snapshot, error) {
	s.mu.Lock()
	tc := s.txCat
	s.mu.Unlock()
	if tc != nil {
		return tc, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	if err := s.e.cat.refresh(ctx); err != nil {
		return nil, catalogError(err)
	}
	return s.e.cat.snapshot(), nil
}

// planned records that this session sent DDL that makes next the catalog
// of its transaction.
func (s *session) planned(next *catalog.Snapshot) {
	s.mu.Lock()
	s.txCat = next
	s.txGen++
	if s.deferFn == nil {
		s.mu.Unlock()
		return // no wire session (tests planning directly)
	}
	s.ddlInFlight++
	s.mu.Unlock()
	s.deferFn(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.ddlInFlight--
		s.maybeSettleLocked()
	})
}

// maybeSettleLocked settles txCat once every DDL is answered and the
// session is idle outside a transaction. The caller holds s.mu; it runs
// on the server-reading goroutine, before the client sees the
// ReadyForQuery.
func (s *session) maybeSettleLocked() {
	// txGates without txCat: a peel rolled back to a savepoint.
	if (s.txCat == nil && len(s.txGates) == 0) || s.ddlInFlight > 0 || s.lastStatus != 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	if err := s.e.cat.refresh(ctx); err != nil {
		// The shared copy may miss the DDL: make every session check
		// with the server again before passing a statement through.
		s.e.cat.invalidate()
		s.e.log.Error("reading the catalog after DDL failed", "err", err)
	}
	s.txCat = nil
	s.txGen++
	// After the refresh: writers now encrypt at the layers the
	// transaction's peels left (none, if it rolled back).
	s.releaseTxGatesLocked()
	// After the refresh: the catalog now shows what the intents stood for.
	s.e.cat.dropIntents(ctx, s.intents)
	s.intents = nil
}

// intend declares that this session is about to give schema.name
// encrypted columns, or (column set) to increment that column of it for
// the first time (lease.go); the intent lasts until its transaction has
// ended.
func (s *session) intend(schema, name string, column *catalog.ID) error {
	ctx, cancel := context.WithTimeout(context.Background(), intentTimeout+lookupTimeout)
	defer cancel()
	n, err := s.e.cat.declareIntent(ctx, schema, name, column)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.intents = append(s.intents, n)
	s.mu.Unlock()
	return nil
}

// Close implements wire.SessionCloser: intents of a transaction the
// session's end aborted are dropped.
func (s *session) Close() {
	s.mu.Lock()
	intents := s.intents
	s.intents = nil
	if len(s.txGates) > 0 {
		// The transaction may have committed before the session ended.
		ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
		if err := s.e.cat.refresh(ctx); err != nil {
			s.e.cat.invalidate()
		}
		cancel()
		s.releaseTxGatesLocked()
	}
	s.mu.Unlock()
	s.e.cat.dropIntents(context.Background(), intents)
}

// pendingTable returns the table r as this session's open transaction
// has it, when its DDL changed it (nil otherwise).
func (s *session) pendingTable(r rewrite.Relation) (*catalog.Table, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txCat == nil {
		return nil, nil
	}
	return s.txCat.Table(r.Schema, r.Name), nil
}

// catalogError is the client's error when the proxy cannot read its
// catalog: without it the proxy cannot tell whether a table is
// encrypted, so it refuses rather than risk sending plaintext.
func catalogError(err error) error {
	return &pgconn.PgError{Severity: "ERROR", Code: "58000", Message: "pgonion cannot read its catalog: " + err.Error()}
}

// stmtPlan is what one statement becomes.
type stmtPlan struct {
	sql     string
	results wire.ResultRewriter
	copyIn  wire.CopyInRewriter
	// before are the rewriters of statements sql runs before the
	// client's (wire.Silent ones): sql is then several statements, the
	// last one the client's. Only in the simple protocol.
	before []wire.ResultRewriter
	// proj is the projection of a SELECT whose rows the server gives as
	// they are, only decrypted (a cursor's FETCHes reuse it).
	proj *projection
	// split is what the proxy computes of a SELECT in split execution
	// (EXPLAIN shows it); sql is then the server's part.
	split *rewrite.AggPlan
}

// lookupTimeout bounds the catalog round trip a statement may wait for.
const lookupTimeout = 10 * time.Second

func (s *session) lookup(r rewrite.Relation) (*catalog.Table, error) {
	if key := r.Schema + "." + r.Name; !slices.Contains(s.planKeys, key) {
		// Counted before the table is read: a switch of the table
		// waits for the statement, or the statement for the switch.
		s.planKeys = append(s.planKeys, key)
		s.planReleases = append(s.planReleases, s.use(key))
	}
	t, err := s.pendingTable(r)
	if err == nil && t != nil {
		// A table this transaction changed (an onion peeled, say) keeps
		// its physical primary key.
		return s.e.cat.withPrimaryKey(s.e.cat.withIncrementIntents(t)), nil
	}
	if err != nil {
		return nil, catalogError(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	t, err = s.e.cat.lookup(ctx, r.Schema, r.Name)
	if err != nil {
		return nil, catalogError(err)
	}
	if t != nil {
		s.e.learnOrigin(t) // for the RowDescriptions of its columns
	}
	return s.e.cat.withPrimaryKey(s.e.cat.withIncrementIntents(t)), nil
}

// cacheable reports whether a statement that passed through may skip
// planning next time at the same catalog version: not DDL, whose planning
// consults policies and sessions' pending tables.
func cacheable(stmts []rewrite.Statement) bool {
	for _, st := range stmts {
		switch st.Kind {
		case "Create", "Drop", "DropOwned", "CreateTableAs", "AlterTable", "Rename", "AlterObjectSchema", "Index":
			return false
		case "DeclareCursor", "Fetch", "ClosePortal":
			return false // a cursor's FETCH depends on its DECLARE (cursor.go)
		}
		if _, ok := savepointStatement(st); ok {
			return false // followed by trackSavepoint
		}
	}
	return true
}

// fastPath reports whether sql is known to pass through (at the current
// catalog version, with no DDL of this session pending), and the tables
// it names, each counted in flight (use) until it is answered.
func (s *session) fastPath(sql string) ([]string, bool) {
	s.mu.Lock()
	pending := s.txCat != nil
	s.mu.Unlock()
	if pending {
		return nil, false
	}
	tables, ok := s.e.cat.passesThrough(sql)
	if !ok {
		return nil, false
	}
	s.useAll(tables)
	// use may have waited for a switch to end: then sql may no longer
	// pass through.
	_, ok = s.e.cat.passesThrough(sql)
	return tables, ok
}

// Query implements wire.Interceptor.
func (s *session) Query(sql string) (*wire.QueryPlan, error) {
	if _, ok := s.fastPath(sql); ok {
		return nil, nil
	}
	if plan, ok, err := s.queryByShape(sql); ok {
		return plan, err
	}
	version := s.e.cat.snapshot().Version
	if pass, err := s.tooLong(sql); pass || err != nil {
		return nil, err
	}
	stmts, err := rewrite.Parse(sql)
	if err != nil {
		return nil, syntaxError(err)
	}
	var plan wire.QueryPlan
	changed := false
	texts := make([]string, len(stmts))
	var tables []string
	for i, st := range stmts {
		s.trackSavepoint(st)
		s.aheadOK, s.aheadAlone, s.planKeys, s.planReleases = i == 0, len(stmts) == 1, nil, nil
		p, err := s.plan(st, nil)
		s.aheadOK, s.aheadAlone = false, false
		tables = append(tables, s.planKeys...)
		if err != nil {
			return nil, err
		}
		texts[i] = st.SQL
		if p == nil {
			plan.Results = append(plan.Results, nil)
			continue
		}
		changed = true
		texts[i] = p.sql
		plan.Results = append(plan.Results, p.before...)
		plan.Results = append(plan.Results, streamed(p.results))
		if p.copyIn != nil {
			plan.CopyIn = p.copyIn
		}
	}
	if !changed {
		if cacheable(stmts) {
			s.e.cat.rememberPassThrough(sql, version, slices.Compact(slices.Sorted(slices.Values(tables))))
		}
		return nil, nil
	}
	plan.SQL = strings.Join(texts, ";\n")
	return &plan, nil
}

// Parse implements wire.Interceptor.
func (s *session) Parse(name, sql string, paramOIDs []uint32) (*wire.Statement, error) {
	if tables, ok := s.fastPath(sql); ok {
		return s.passStatement(sql, paramOIDs, tables), nil
	}
	key := newPlanKey(sql, paramOIDs)
	if st, ok := s.cachedStatement(key); ok {
		return st, nil
	}
	version := s.e.cat.snapshot().Version
	if pass, err := s.tooLong(sql); pass || err != nil {
		return nil, err
	}
	stmts, err := rewrite.Parse(sql)
	if err != nil {
		return nil, syntaxError(err)
	}
	if len(stmts) != 1 {
		for _, st := range stmts {
			s.planKeys, s.planReleases = nil, nil
			if p, err := s.plan(st, nil); err != nil || p != nil {
				return nil, &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: "cannot insert multiple commands into a prepared statement"}
			}
		}
		return nil, nil
	}
	if _, ok := savepointStatement(stmts[0]); ok {
		st := stmts[0]
		return &wire.Statement{SQL: sql, ParamOIDs: paramOIDs, OnBind: func() { s.trackSavepoint(st) }}, nil
	}
	ext := &extended{oids: paramOIDs}
	s.planKeys, s.planReleases = nil, nil
	// A Parse may run statements ahead where the wire allows it (Exec
	// says ErrExecUnavailable otherwise).
	s.aheadOK = true
	p, err := s.plan(stmts[0], ext)
	s.aheadOK = false
	tables := s.planKeys
	if err != nil {
		return nil, err
	}
	if p == nil {
		if cacheable(stmts) {
			s.e.cat.rememberPassThrough(sql, version, tables)
		}
		return s.passStatement(sql, paramOIDs, tables), nil
	}
	st := ext.statement(p)
	if len(tables) > 0 {
		st.OnBind = func() { s.useAll(tables) }
	}
	if cacheable(stmts) {
		s.keepStatement(key, version, st, tables)
	}
	return st, nil
}

// passStatement is what a statement that passes through becomes in the
// extended protocol: nil, or (when it names tables) the same statement
// with its tables counted in flight at each Bind (switch.go).
func (s *session) passStatement(sql string, paramOIDs []uint32, tables []string) *wire.Statement {
	if len(tables) == 0 {
		return nil
	}
	return &wire.Statement{SQL: sql, ParamOIDs: paramOIDs, OnBind: func() { s.useAll(tables) }}
}

// extended collects what a statement planned for the extended protocol
// needs besides its SQL.
type extended struct {
	oids       []uint32 // the client's declared parameter types
	serverOIDs []uint32
	bind       func(b *pgproto3.Bind) error
	describe   func(pd []uint32) []uint32
	results    func(formats []int16) wire.ResultRewriter
	resultFmts func(client []int16) ([]int16, error)
	copyIn     func() wire.CopyInRewriter
}

func (x *extended) statement(p *stmtPlan) *wire.Statement {
	st := &wire.Statement{SQL: p.sql, ParamOIDs: x.oids}
	if x.serverOIDs != nil {
		st.ParamOIDs = x.serverOIDs
	}
	if x.describe != nil {
		st.DescribeParams = func(pd *pgproto3.ParameterDescription) error {
			pd.ParameterOIDs = x.describe(pd.ParameterOIDs)
			return nil
		}
	}
	if x.bind != nil || x.resultFmts != nil {
		st.Bind = func(b *pgproto3.Bind) error {
			if x.resultFmts != nil {
				f, err := x.resultFmts(b.ResultFormatCodes)
				if err != nil {
					return err
				}
				b.ResultFormatCodes = f
			}
			if x.bind != nil {
				return x.bind(b)
			}
			return nil
		}
	}
	switch {
	case x.results != nil:
		results := x.results
		st.Results = func(formats []int16) wire.ResultRewriter { return streamed(results(formats)) }
	case p.results != nil:
		r := p.results
		st.Results = func([]int16) wire.ResultRewriter { return r }
	}
	if x.copyIn != nil {
		st.CopyIn = x.copyIn
	}
	return st
}

// plan decides what one statement becomes: nil to pass it through. ext is
// nil for the simple protocol. A statement that compares columns under
// different keys whose policies allow re-keying them into one join group
// (rewrite.RekeyError) waits for the re-keying and is planned again.
func (s *session) plan(st rewrite.Statement, ext *extended) (*stmtPlan, error) {
	orig := st.Clone()
	p, err := s.planOnce(st, ext)
	// Each peel in the transaction replans once; a statement needs at
	// most a few onions.
	for i := 0; errors.Is(err, errPeeledInTx) && i < 8; i++ {
		if ext != nil {
			*ext = extended{oids: ext.oids}
		}
		st = orig.Clone()
		p, err = s.planOnce(st, ext)
	}
	var rk *rewrite.RekeyError
	if !errors.As(err, &rk) {
		return p, err
	}
	if err := s.rekey(rk); err != nil {
		// Not now (inside a transaction block, say): the proxy compares
		// the columns itself where split execution can run the query,
		// which reveals less than re-keying would.
		if ext != nil {
			*ext = extended{oids: ext.oids}
		}
		s.splitNotRekey = true
		p2, err2 := s.planOnce(orig.Clone(), ext)
		s.splitNotRekey = false
		if err2 == nil {
			return p2, nil
		}
		if ext != nil {
			*ext = extended{oids: ext.oids}
		}
		return nil, err
	}
	if ext != nil {
		*ext = extended{oids: ext.oids}
	}
	p, err = s.planOnce(orig, ext)
	if errors.As(err, &rk) {
		return nil, rk.Refusal()
	}
	return p, err
}

// planOnce is plan without re-keying.
func (s *session) planOnce(st rewrite.Statement, ext *extended) (*stmtPlan, error) {
	if rewrite.NamesProxySchema(st) {
		return nil, &pgconn.PgError{Severity: "ERROR", Code: "42501",
			Message: "permission denied for the proxy's schemas " + rewrite.ProxySchema + " and " + rewrite.TwinSchemaPrefix + "*: they hold its metadata and the logical definitions of the tables with encrypted columns",
			Hint:    "Use proxy status and proxy columns to read and change it."}
	}
	if err := s.checkEmbedded(st); err != nil {
		return nil, err
	}
	if err := s.checkUserTypeDDL(st); err != nil {
		return nil, err
	}
	if rewrite.CatalogQuery(st) {
		return s.planCatalogQuery(st, ext)
	}
	switch st.Kind {
	case "Explain":
		return s.planExplain(st, ext)
	case "Fetch":
		return s.planFetch(st, ext)
	case "ClosePortal":
		s.planClose(st)
		return nil, nil
	case "Create":
		return s.planCreate(st, ext)
	case "Drop":
		if ds := st.Tree.Stmt.GetDropStmt(); ds != nil && ds.RemoveType == pg_query.ObjectType_OBJECT_TABLE {
			return s.planDrop(st)
		}
		if ds := st.Tree.Stmt.GetDropStmt(); ds != nil && ds.RemoveType == pg_query.ObjectType_OBJECT_SCHEMA {
			return s.planDrop(st)
		}
	case "DropOwned":
		if len(s.e.cat.snapshot().Tables()) > 0 {
			return nil, rewrite.Refusal("DROP OWNED through the proxy could drop tables with encrypted columns without it; drop those tables first")
		}
	case "CreateTableAs":
		if ctas := st.Tree.Stmt.GetCreateTableAsStmt(); ctas.GetObjtype() == pg_query.ObjectType_OBJECT_MATVIEW {
			for _, r := range rewrite.Relations(st) {
				if t, err := s.lookup(r); err != nil || t != nil {
					if err != nil {
						return nil, err
					}
					return nil, rewrite.Refusal("CREATE MATERIALIZED VIEW over table %s with encrypted columns is not supported: the server cannot compute it over ciphertexts", t.Name)
				}
			}
			return nil, nil
		}
		return s.planCreateTableAs(st, ext)
	case "Select":
		if st.Tree.Stmt.GetSelectStmt().GetIntoClause() != nil {
			return s.planCreateTableAs(st, ext)
		}
	}
	rels := rewrite.Relations(st)
	var tables []*catalog.Table
	seen := map[catalog.ID]int{}
	byName := map[string]*catalog.Table{}
	for _, r := range rels {
		t, err := s.lookup(r)
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue
		}
		byName[r.Schema+"."+r.Name] = t
		if seen[t.ID] == 0 {
			tables = append(tables, t)
		}
		seen[t.ID]++
	}
	if len(tables) == 0 {
		return nil, nil
	}
	t := tables[0]
	if rewrite.ConstantRelation(st) {
		return nil, rewrite.Refusal("a subquery, CTE or VALUES list of constants in a statement on table %s with encrypted columns is not supported: the server would see the constants in plaintext; write the values in the condition itself", t.Name)
	}
	single := len(tables) == 1 && seen[t.ID] == 1
	switch st.Kind {
	case "Truncate", "Lock", "Vacuum", "Grant", "Cluster":
		// No values of the table go in or out. CLUSTER reorders the rows
		// by an index the server already holds (over ciphertexts): the
		// new order tells it nothing the index did not.
		return nil, nil
	case "Insert":
		if single {
			return s.planInsert(st, t, ext)
		}
		if rewrite.InsertSelect(st) != nil {
			// INSERT ... SELECT from other tables: the target is the
			// statement's relation.
			rv := st.Tree.Stmt.GetInsertStmt().Relation
			for _, r := range rels {
				if r.Name == rv.Relname && (rv.Schemaname == "" || r.Schema == rv.Schemaname) {
					if target := byName[r.Schema+"."+r.Name]; target != nil {
						return s.planInsertSelect(st, target, ext)
					}
					break
				}
			}
		}
	case "Select":
		return s.planQuery(st, byName, ext)
	case "DeclareCursor":
		return s.planDeclare(st, ext)
	case "Update":
		if single {
			return s.planUpdate(st, t, ext)
		}
	case "Copy":
		cp, err := rewrite.PlanCopyOut(st)
		if err != nil {
			return nil, err
		}
		if cp != nil {
			return s.planCopyOut(cp, ext)
		}
		if single {
			return s.planCopy(st, t, ext)
		}
	case "Delete":
		if single {
			return s.planDelete(st, t, ext)
		}
	case "AlterTable", "Rename", "AlterObjectSchema":
		if single && len(rels) == 1 {
			return s.planAlter(st, t)
		}
		if target, refs, ok := rewrite.AlterForeignKeys(st); ok {
			return s.planAlterForeignKeys(st, byName[target.Schema+"."+target.Name], refs)
		}
	case "Index":
		if single && len(rels) == 1 {
			return s.planIndex(st, t)
		}
	}
	if !single || len(rels) > 1 {
		refusal := rewrite.Refusal("%s combining table %s with encrypted columns with other tables or subqueries is not supported yet", statementName(st), t.Name)
		if st.Kind == "Delete" || st.Kind == "Update" {
			// WHERE ... IN (SELECT ... FROM other tables): evaluated
			// first, the statement names its table alone. DELETE ...
			// USING and UPDATE ... FROM: the join as such a subquery.
			lookup := func(schema, name string) *catalog.Table { return byName[schema+"."+name] }
			if target := dmlTarget(st, byName); target != nil {
				joined, ok, err := rewrite.JoinAsSubquery(st, target)
				if err != nil {
					return nil, err
				}
				if ok {
					st = joined
				}
			}
			if ahead, ok := s.subqueriesAhead(st.Clone(), lookup, ext, refusal); ok {
				return ahead()
			}
		}
		return nil, refusal
	}
	return nil, rewrite.Refusal("%s on table %s with encrypted columns is not supported yet", statementName(st), t.Name)
}

// statementName names a statement kind for messages: "Select" -> "SELECT".
func statementName(st rewrite.Statement) string {
	var b strings.Builder
	for i, r := range st.Kind {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// tooLong handles a statement text longer than the proxy parses (parsing
// and rewriting take tens of times the text's size): while no table has
// encrypted columns it passes through unparsed (pass), else it is refused
// with 54000, since the proxy cannot tell which tables it touches.
func (s *session) tooLong(sql string) (pass bool, err error) {
	if len(sql) <= s.e.maxStmt {
		return false, nil
	}
	names, err := s.encryptedNames()
	if err != nil {
		return false, err
	}
	if len(names) == 0 {
		return true, nil
	}
	return false, &pgconn.PgError{Severity: "ERROR", Code: "54000",
		Message: fmt.Sprintf("statement too long for the proxy to check: %d bytes, the limit is %d", len(sql), s.e.maxStmt),
		Hint:    "Send long lists of values as parameters (e.g. = ANY($1)) or with COPY, or raise the proxy's --max-statement-size."}
}

// syntaxError turns a parse failure into the error PostgreSQL would give.
// Statements the proxy cannot parse are refused, not passed on: it could
// not tell which tables they touch.
func syntaxError(err error) error {
	var se *rewrite.SyntaxError
	if errors.As(err, &se) {
		pe := &pgconn.PgError{Severity: "ERROR", Code: "42601", Message: se.Message}
		if se.Position > 0 {
			pe.Position = int32(se.Position)
		}
		return pe
	}
	return fmt.Errorf("parsing the statement: %w", err)
}

// dmlTarget is the table with encrypted columns a DELETE or UPDATE
// writes, nil when it has none.
func dmlTarget(st rewrite.Statement, byName map[string]*catalog.Table) *catalog.Table {
	var rv *pg_query.RangeVar
	if d := st.Tree.Stmt.GetDeleteStmt(); d != nil {
		rv = d.Relation
	} else if u := st.Tree.Stmt.GetUpdateStmt(); u != nil {
		rv = u.Relation
	}
	if rv == nil {
		return nil
	}
	schema := rv.Schemaname
	if schema == "" {
		schema = rewrite.DefaultSchema
	}
	return byName[schema+"."+rv.Relname]
}
