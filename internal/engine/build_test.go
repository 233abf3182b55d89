package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSearchOnFirstNeed: under the default policy a text column may get
// search tokens but has none until a LIKE could use them; the first such
// LIKE is answered exactly (by the proxy) and starts building them in the
// background, while writes go on; afterwards the server holds the tokens
// for every row and LIKE, prefiltered by them, still answers exactly.
func TestSearchOnFirstNeed(t *testing.T) {
	ctx := context.Background()
	db := newEncDB(t)
	p := startProxy(t, db, nil)
	conn := p.connect(t, pgx.QueryExecModeExec)
	direct := db.direct(t)
	mustExec(t, conn, "CREATE TABLE notes (id int, body text, tag varchar(10))")
	mustExec(t, direct, "CREATE TABLE notes_plain (id int, body text, tag varchar(10))")
	words := []string{"apple pie", "Apple tart", "banana split", "cherry", "pineapple", "BANANA bread", "kiwi"}
	insert := func(from, to int) {
		for i := from; i < to; i++ {
			body := any(fmt.Sprintf("%s no %d", words[i%len(words)], i))
			if i%11 == 0 {
				body = nil
			}
			for _, c := range []*pgx.Conn{conn, direct} {
				table := "notes"
				if c == direct {
					table = "notes_plain"
				}
				mustExec(t, c, "INSERT INTO "+table+" VALUES ($1, $2, $3)", i, body, fmt.Sprint("t", i%3))
			}
		}
	}
	insert(0, 300)
	tokens := func() (exists bool, filled int) {
		t.Helper()
		if err := direct.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'notes' AND column_name = 'body__srch')`).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists {
			if err := direct.QueryRow(ctx, "SELECT count(body__srch) FROM notes").Scan(&filled); err != nil {
				t.Fatal(err)
			}
		}
		return exists, filled
	}
	if exists, _ := tokens(); exists {
		t.Fatal("search tokens were written before any LIKE needed them")
	}
	queries := []string{
		"SELECT id FROM %s WHERE body ILIKE '%%apple%%' ORDER BY id",
		"SELECT id, body FROM %s WHERE body LIKE 'BANANA%%' AND id > 10 ORDER BY id",
		"SELECT count(*) FROM %s WHERE body NOT LIKE '%%e%%'",
		"SELECT id FROM %s WHERE tag = 't1' AND body LIKE '%%no 1_' ORDER BY id",
		"SELECT id FROM %s WHERE body = 'kiwi no 6'",
		"SELECT tag, body, count(*) FROM %[1]s WHERE id < 50 GROUP BY tag, body ORDER BY 1, 2",
		"SELECT a.id FROM %[1]s a WHERE EXISTS (SELECT 1 FROM %[1]s b WHERE b.tag = a.tag AND b.body = $1) ORDER BY 1",
	}
	same := func(stage string) {
		t.Helper()
		for _, q := range queries {
			var args []any
			if strings.Contains(q, "$1") {
				args = []any{"kiwi no 6"}
			}
			got, want := queryStrings(t, conn, fmt.Sprintf(q, "notes"), args...), queryStrings(t, direct, fmt.Sprintf(q, "notes_plain"), args...)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %s\nthrough the proxy: %v\nplaintext: %v", stage, q, got, want)
			}
		}
	}
	// Equality first: the Eq onion is peeled to DET, and the build must
	// write its new cells at DET too.
	queryStrings(t, conn, "SELECT id FROM notes WHERE body = 'cherry no 3'")
	// NOT LIKE cannot use tokens: it builds nothing.
	queryStrings(t, conn, "SELECT id FROM notes WHERE body NOT LIKE '%x%'")
	time.Sleep(200 * time.Millisecond)
	if exists, _ := tokens(); exists || p.eng.OnionsBuilt() != 0 {
		t.Fatal("NOT LIKE built search tokens")
	}
	same("first LIKE")
	// Writes while the tokens are built.
	insert(300, 360)
	deadline := time.Now().Add(30 * time.Second)
	for p.eng.OnionsBuilt() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the search onion was not built within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	insert(360, 400)
	exists, filled := tokens()
	var nonNull int
	if err := direct.QueryRow(ctx, "SELECT count(*) FROM notes_plain WHERE body IS NOT NULL").Scan(&nonNull); err != nil {
		t.Fatal(err)
	}
	if !exists || filled != nonNull {
		t.Fatalf("after the build: tokens column %v, %d rows with tokens, want %d", exists, filled, nonNull)
	}
	var onions string
	if err := direct.QueryRow(ctx, `SELECT c.onions::text FROM pgonion.columns c JOIN pgonion.tables t USING (table_id) WHERE t.table_name = 'notes' AND c.column_name = 'body'`).Scan(&onions); err != nil {
		t.Fatal(err)
	}
	t.Logf("body's onions after the build: %s", onions)
	same("after the build")
	// The varchar column was never searched: no tokens.
	var tagTokens bool
	if err := direct.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'notes' AND column_name = 'tag__srch')`).Scan(&tagTokens); err != nil || tagTokens {
		t.Fatalf("tag has search tokens (%v) though no LIKE used it", err)
	}
}
