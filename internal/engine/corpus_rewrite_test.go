package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/recrypt"
)

// TestCorpusThroughRotation runs the query corpus (testdata/queries.sql,
// simple protocol) during a rotation of the keys of every encrypted
// column of the corpus tables, paused midway (the new cells built for
// part of the rows, the old ones still current) and after it (every
// column at its new key version, its onions back at their strongest
// layers, peeled again by the queries that need them): every answer must
// be the plaintext's each time, as TestQueryCorpus checks once.
func TestCorpusThroughRotation(t *testing.T) {
	ctx := context.Background()
	corpus := loadCorpus(t, "testdata/queries.sql")
	db, _, enc, plain := corpusWorld(t)
	run := func(stage string) {
		t.Helper()
		var problems []string
		n := 0
		for i := range corpus {
			q := &corpus[i]
			if q.known != "" {
				continue
			}
			n++
			want, werr := runCorpusQuery(ctx, plain, pgx.QueryExecModeSimpleProtocol, q.sql, q.params)
			got, gerr := runCorpusQuery(ctx, enc, pgx.QueryExecModeSimpleProtocol, q.sql, q.params)
			if problem := checkCorpusRun(q, got, gerr, want, werr); problem != "" {
				problems = append(problems, fmt.Sprintf("queries.sql:%d: %s: %s", q.line, q.sql, problem))
			}
		}
		if len(problems) > 0 {
			t.Fatalf("%s: %d of %d queries differ:\n%s", stage, len(problems), n, strings.Join(problems[:min(10, len(problems))], "\n"))
		}
		t.Logf("%s: %d queries as the plaintext answers them", stage, n)
	}
	// Before the rotation the setup is TestQueryCorpus's.
	rw := newRewriter(t, db)
	rw.BatchBlocks = 1
	paused := 0
	rw.AfterBatch = func(recrypt.Progress) error {
		if paused == 0 {
			run("rotation paused midway")
		}
		paused++
		return nil
	}
	rotated := 0
	for _, table := range []string{"t1", "t2", "t3", "t4"} {
		plan, err := rw.RotateColumns(ctx, "public", table, nil)
		if err != nil {
			t.Fatalf("rotating %s: %v", table, err)
		}
		rotated += len(plan.Columns)
	}
	if paused == 0 || rotated < 10 {
		t.Fatalf("rotated %d columns in %d batches", rotated, paused)
	}
	run("after the rotation")
}
