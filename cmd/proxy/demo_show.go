package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// demoTable is created and filled through the proxy by `proxy demo`.
var demoStatements = []string{
	`CREATE TABLE IF NOT EXISTS patients (id int PRIMARY KEY, name text, diagnosis text, balance numeric(10,2), born date)`,
	`INSERT INTO patients VALUES
	  (1, 'Ada Lovelace', 'seasonal flu', 120.50, '1815-12-10'),
	  (2, 'Alan Turing', 'sprained ankle', 80.00, '1912-06-23'),
	  (3, 'Grace Hopper', 'seasonal flu', NULL, '1906-12-09')`,
}

// demoShow fills the example table through the proxy, then prints what a
// client of the proxy sees next to what the server stores.
func demoShow(w io.Writer, proxyURL, directDSN string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := pgx.Connect(ctx, proxyURL)
	if err != nil {
		return err
	}
	defer client.Close(ctx)
	for _, s := range demoStatements {
		if _, err := client.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", strings.Fields(s)[0], err)
		}
	}
	fmt.Fprintln(w, "\nThrough the proxy, a client sees (SELECT * FROM patients):")
	if err := printRows(ctx, w, client, "SELECT * FROM patients", 0); err != nil {
		return err
	}
	server, err := pgx.Connect(ctx, directDSN)
	if err != nil {
		return err
	}
	defer server.Close(ctx)
	fmt.Fprintln(w, "\nOn the server, the same table holds (ciphertexts shortened):")
	return printRows(ctx, w, server, "SELECT pgonion_salt, id__eq, name__eq, diagnosis__eq, balance__ord, born__eq FROM patients", 10)
}

// printRows prints a query's result as a table; with short > 0, bytea and
// arrays are cut to about short characters.
func printRows(ctx context.Context, w io.Writer, conn *pgx.Conn, sql string, short int) error {
	rows, err := conn.Query(ctx, sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return err
	}
	defer rows.Close()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	var names []string
	for _, f := range rows.FieldDescriptions() {
		names = append(names, f.Name)
	}
	fmt.Fprintln(tw, "    "+strings.Join(names, "\t"))
	for rows.Next() {
		raw := rows.RawValues()
		cells := make([]string, len(raw))
		for i, v := range raw {
			switch {
			case v == nil:
				cells[i] = "NULL"
			case short > 0 && len(v) > short+2:
				s := string(v)
				if strings.HasPrefix(s, `\x`) {
					b, _ := hex.DecodeString(s[2:])
					cells[i] = fmt.Sprintf("%s… (%d bytes)", s[:short], len(b))
				} else {
					cells[i] = s[:short] + "…"
				}
			default:
				cells[i] = string(v)
			}
		}
		fmt.Fprintln(tw, "    "+strings.Join(cells, "\t"))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return tw.Flush()
}
