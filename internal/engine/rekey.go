package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/recrypt"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// Joins across keys on demand (CryptDB's JOIN-ADJ, DESIGN §12). When a
// statement compares two encrypted columns under different keys and
// both policies allow it (rewrite.RekeyError), the proxy re-keys one
// column into the other's join group, or both into a new one, with the
// re-encryption engine (package recrypt, online), records the group in
// the catalog, and plans the statement again: the server then evaluates
// the comparison over the onions (peeled to DET, or OPE, as for any
// comparison). The statement waits, as for a peel. From then on the
// server learns which values of the columns are equal across them (and,
// with OPE, their order); `proxy columns plan` reports it beforehand.
//
// Inside a transaction block the statement is refused instead: the
// re-keying must lock the table, which the transaction may hold.

// rekeyTimeout bounds how long a statement waits for its re-keyings;
// rekeyStartWait how long it waits for a rewrite of the table that holds
// its lock but has recorded nothing yet (it may be the same re-keying,
// starting in another proxy).
const (
	rekeyTimeout   = 30 * time.Minute
	rekeyStartWait = 2 * time.Second
)

// rekey performs the re-keyings rk lists and makes the catalog current.
func (s *session) rekey(rk *rewrite.RekeyError) error {
	s.mu.Lock()
	inBlock := s.lastStatus == 'T' || s.lastStatus == 'E'
	s.mu.Unlock()
	if inBlock {
		var r *rewrite.Refused
		if !errors.As(rk.Refusal(), &r) {
			return rk.Refusal()
		}
		pe := *r
		pe.Hint = fmt.Sprintf("The proxy re-keys %s into join group %s on demand, but not inside a transaction block: send the statement once outside one, or run proxy columns set with --join-group %[2]s.",
			rk.Rekeys[0].Table.Name+"."+rk.Rekeys[0].Column.Name, rk.Rekeys[0].Group)
		return &pe
	}
	s.releasePlanned()
	ctx, cancel := context.WithTimeout(context.Background(), rekeyTimeout)
	defer cancel()
	for _, r := range rk.Rekeys {
		if err := s.e.rekeyColumn(ctx, r, rk.Reveals); err != nil {
			return err
		}
	}
	if err := s.e.cat.refresh(ctx); err != nil {
		return catalogError(err)
	}
	return nil
}

// rekeyColumn moves one column into its join group on a connection of its
// own; another process re-keying the table is waited for (it may be doing
// the same).
func (e *Engine) rekeyColumn(ctx context.Context, r rewrite.Rekey, reveals string) error {
	what := []any{"table", r.Table.Schema + "." + r.Table.Name, "column", r.Column.Name, "join_group", r.Group}
	conn, err := pgx.Connect(ctx, e.cat.dsn)
	if err != nil {
		return fmt.Errorf("engine: re-keying %s.%s: %w", r.Table.Name, r.Column.Name, err)
	}
	defer conn.Close(context.Background())
	keys, err := e.rewriteKeys(ctx, conn)
	if err != nil {
		return fmt.Errorf("engine: re-keying %s.%s: %w", r.Table.Name, r.Column.Name, err)
	}
	rw := &recrypt.Rewriter{Conn: conn, Keys: keys}
	e.log.Info("re-keying a column into a join group so that the server can compare it (JOIN-ADJ)", append(what, "reveals", reveals)...)
	began := time.Now()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		_, err := rw.JoinColumn(ctx, r.Table.Schema, r.Table.Name, r.Column.Name, r.Group)
		if errors.Is(err, recrypt.ErrBusy) {
			// Another process rewrites the table: wait if it is this
			// re-keying (another proxy's), or one just starting;
			// refuse if it is another rewrite, which may take long.
			under, uerr := recrypt.UnderwayTargets(ctx, conn, r.Table.Schema, r.Table.Name)
			same := false
			if to, ok := under[r.Column.Name]; ok && to.JoinGroup == r.Group {
				same = true
			}
			// An onion this proxy builds on the table is waited for:
			// it is short, and started by a query like this one.
			building := e.building(r.Table) && time.Since(began) < rekeyBuildWait
			if uerr == nil && !same && !building && (len(under) > 0 || time.Since(began) > rekeyStartWait) {
				return &pgconn.PgError{Severity: "ERROR", Code: "55006",
					Message: fmt.Sprintf("comparing %s.%s under another key needs it re-keyed into join group %s, but another rewrite of table %s is under way", r.Table.Name, r.Column.Name, r.Group, r.Table.Name),
					Hint:    "Retry once it is done (proxy status shows its progress)."}
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
				continue
			}
		}
		if err != nil {
			e.log.Warn("re-keying failed", append(what, "err", err)...)
			return rewrite.Refuse(fmt.Sprintf("comparing %s.%s under another key needs it re-keyed into join group %s, which failed", r.Table.Name, r.Column.Name, r.Group), err.Error(), "")
		}
		e.rekeys.Add(1)
		e.log.Info("re-keyed a column into a join group", append(what, "took", time.Since(began).Round(time.Millisecond))...)
		return nil
	}
}

// Rekeys returns how many columns this engine re-keyed into join groups.
func (e *Engine) Rekeys() int64 { return e.rekeys.Load() }
