package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/recrypt"
)

// TestCorpusThroughRewrites runs the query corpus (testdata/queries.sql,
// simple protocol) during and after each kind of rewrite of the corpus
// tables: building an onion (t2.name's search tokens), a rotation of the
// keys of every encrypted column (each onion back at its strongest layer,
// peeled again by the queries that need them), re-keying a column into a
// join group (t3.rank into k), and decrypting a table (t4) then adopting
// it again. Each is paused midway once (the new cells built for part of
// the rows, the old ones still current). Every answer must be the
// plaintext's each time, as TestQueryCorpus checks once; while t4 is
// plain, a refusal the corpus expects of it may be an exact answer.
func TestCorpusThroughRewrites(t *testing.T) {
	ctx := context.Background()
	corpus := loadCorpus(t, "testdata/queries.sql")
	db, _, enc, plain := corpusWorld(t)
	rotating := false // between the rotations of a join group's tables
	run := func(stage string, lenient, midway bool) {
		t.Helper()
		var problems []string
		n := 0
		for i := range corpus {
			q := corpus[i]
			if q.known != "" || raceDetector && i%3 != 0 {
				continue // under the race detector, a third of the corpus
			}
			n++
			want, werr := runCorpusQuery(ctx, plain, pgx.QueryExecModeSimpleProtocol, q.sql, q.params)
			got, gerr := runCorpusQuery(ctx, enc, pgx.QueryExecModeSimpleProtocol, q.sql, q.params)
			if (lenient || raceDetector) && q.refuse != "" && gerr == nil {
				// Answered: then exactly. Under the race detector a third
				// of the corpus runs, so the join groups earlier queries
				// leave, which some refusals depend on, differ.
				q.refuse = ""
			}
			if midway && pgCode(gerr) == "55006" {
				continue // a re-keying refused while the paused rewrite holds the table
			}
			if pgCode(gerr) == "0A000" && strings.Contains(gerr.Error()+pgDetail(gerr), "at different keys") && rotating {
				continue // a join group rotated in some of its tables only
			}
			if problem := checkCorpusRun(&q, got, gerr, want, werr); problem != "" {
				problems = append(problems, fmt.Sprintf("queries.sql:%d: %s: %s", q.line, q.sql, problem))
			}
		}
		if len(problems) > 0 {
			t.Fatalf("%s: %d of %d queries differ:\n%s", stage, len(problems), n, strings.Join(problems[:min(10, len(problems))], "\n"))
		}
		t.Logf("%s: %d queries as the plaintext answers them", stage, n)
	}
	rw := newRewriter(t, db)
	rw.BatchBlocks = 1
	var paused int
	var stage string
	var lenient bool
	rw.AfterBatch = func(recrypt.Progress) error {
		if paused == 0 {
			run(stage+" paused midway", lenient, true)
		}
		paused++
		return nil
	}
	rewrite := func(what string, midwayLenient bool, f func() (*recrypt.Plan, error)) int {
		t.Helper()
		stage, lenient, paused = what, midwayLenient, 0
		plan, err := f()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if paused == 0 {
			t.Fatalf("%s: no batch to pause after", what)
		}
		return len(plan.Columns)
	}

	rewrite("building t2.name's search onion", false, func() (*recrypt.Plan, error) {
		return rw.BuildOnion(ctx, "public", "t2", "name", onion.KindSearch)
	})
	run("after building t2.name's search onion", false, false)

	rotated := 0
	rotating = true
	for _, table := range []string{"t1", "t2", "t3", "t4"} {
		rotated += rewrite("rotating "+table, false, func() (*recrypt.Plan, error) { return rw.RotateColumns(ctx, "public", table, nil) })
	}
	if rotated < 10 {
		t.Fatalf("rotated %d columns", rotated)
	}
	rotating = false
	run("after the rotation", false, false)

	rewrite("re-keying t3.rank into join group k", false, func() (*recrypt.Plan, error) {
		return rw.JoinColumn(ctx, "public", "t3", "rank", "k")
	})
	run("after re-keying t3.rank", false, false)

	rewrite("decrypting t4", true, func() (*recrypt.Plan, error) { return rw.DecryptColumns(ctx, "public", "t4", nil) })
	run("after decrypting t4", true, false)
	rewrite("adopting t4 again", true, func() (*recrypt.Plan, error) {
		return rw.EncryptColumns(ctx, "public", "t4", nil, corpusPolicy)
	})
	if _, err := rw.Scrub(ctx, "public", "t4"); err != nil {
		t.Fatal(err)
	}
	run("after adopting t4 again", false, false)
}

// pgDetail is a server error's DETAIL ("" for other errors): split
// execution's reason for a refusal is there.
func pgDetail(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Detail
	}
	return ""
}
