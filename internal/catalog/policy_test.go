package catalog

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/pgonion/pgonion/internal/keys"
	"github.com/pgonion/pgonion/internal/pgtest"
	"github.com/pgonion/pgonion/migrations"
)

func samplePolicies() []ColumnPolicy {
	return []ColumnPolicy{
		{Schema: "public", Table: "orders", Column: "customer_id", Policy: Encrypted, Capabilities: []string{"eq", "ord"}, JoinGroup: "customer"},
		{Schema: "public", Table: "orders", Column: "note", Policy: Plain},
		{Schema: "public", Table: "orders", Column: "total", Policy: Encrypted},
		{Schema: "public", Table: "people", Column: "id", Policy: Encrypted, JoinGroup: "customer"},
		{Schema: "public", Table: "people", Column: "ssn", Policy: Sensitive},
	}
}

func TestPolicyRoundTrip(t *testing.T) {
	ctx := context.Background()
	_, c, key := setup(t)
	want := samplePolicies()
	inTx(t, c, func(tx pgx.Tx) error {
		for _, p := range want {
			if err := SetPolicy(ctx, tx, key, p); err != nil {
				return err
			}
		}
		return nil
	})
	got, err := Policies(ctx, c, key, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, policyEqual) {
		t.Fatalf("Policies = %+v\nwant %+v", got, want)
	}
	got, err = Policies(ctx, c, key, "public", "people")
	if err != nil || len(got) != 2 || got[0].JoinGroup != "customer" || got[1].JoinGroup != "" {
		t.Fatalf("people's policies = %+v, %v", got, err)
	}
	// Replacing a declaration replaces its join group too.
	leave := want[0]
	leave.JoinGroup = ""
	inTx(t, c, func(tx pgx.Tx) error { return SetPolicy(ctx, tx, key, leave) })
	got, err = Policies(ctx, c, key, "public", "orders")
	if err != nil || got[0].Column != "customer_id" || got[0].JoinGroup != "" {
		t.Fatalf("after leaving the group: %+v, %v", got, err)
	}
	var stored *string
	if err := c.QueryRow(ctx, "SELECT join_group FROM pgonion.policies WHERE column_name = 'customer_id'").Scan(&stored); err != nil || stored != nil {
		t.Fatalf("no join group is stored as %v (%v), want NULL", stored, err)
	}
}

func policyEqual(a, b ColumnPolicy) bool {
	return a.Schema == b.Schema && a.Table == b.Table && a.Column == b.Column && a.Policy == b.Policy &&
		slices.Equal(a.Capabilities, b.Capabilities) && (a.Capabilities == nil) == (b.Capabilities == nil) && a.JoinGroup == b.JoinGroup
}

func TestSetPolicyRefusesBadJoinGroups(t *testing.T) {
	ctx := context.Background()
	_, c, key := setup(t)
	for _, p := range []ColumnPolicy{
		{Policy: Plain, JoinGroup: "g"},
		{Policy: Sensitive, JoinGroup: "g"},
		{Policy: Encrypted, Capabilities: []string{"ord", "add"}, JoinGroup: "g"},
		{Policy: Encrypted, JoinGroup: "Customer"},
		{Policy: Encrypted, JoinGroup: "1st"},
		{Policy: Encrypted, JoinGroup: "a-b"},
		{Policy: Encrypted, JoinGroup: strings.Repeat("g", 64)},
	} {
		p.Schema, p.Table, p.Column = "public", "t", "c"
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := SetPolicy(ctx, tx, key, p); err == nil || !strings.Contains(err.Error(), "public.t.c") || !strings.Contains(err.Error(), "join group") {
			t.Errorf("SetPolicy(%+v) = %v, want a refusal naming the column and the join group", p, err)
		}
		_ = tx.Rollback(ctx)
	}
	for _, g := range []string{"g", "_", "customer_id", "a" + strings.Repeat("9", 62)} {
		if !ValidJoinGroupName(g) {
			t.Errorf("ValidJoinGroupName(%q) = false", g)
		}
	}
}

// TestPolicyTamperDetected changes declared policies behind the proxy's
// back; Policies must refuse each change.
func TestPolicyTamperDetected(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, sql string }{
		{"leave a join group", "UPDATE pgonion.policies SET join_group = NULL WHERE column_name = 'customer_id'"},
		{"change a join group", "UPDATE pgonion.policies SET join_group = 'other' WHERE column_name = 'customer_id'"},
		{"join a group", "UPDATE pgonion.policies SET join_group = 'customer' WHERE column_name = 'total'"},
		{"downgrade a policy", "UPDATE pgonion.policies SET policy = 'plain' WHERE column_name = 'ssn'"},
		{"widen capabilities", "UPDATE pgonion.policies SET capabilities = '{eq,ord,add,search}' WHERE column_name = 'customer_id'"},
		{"move a column", "UPDATE pgonion.policies SET table_name = 'people' WHERE column_name = 'total'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c, key := setup(t)
			inTx(t, c, func(tx pgx.Tx) error {
				for _, p := range samplePolicies() {
					if err := SetPolicy(ctx, tx, key, p); err != nil {
						return err
					}
				}
				return nil
			})
			if _, err := Policies(ctx, c, key, "", ""); err != nil {
				t.Fatalf("untouched policies: %v", err)
			}
			if _, err := c.Exec(ctx, tc.sql); err != nil {
				t.Fatal(err)
			}
			if _, err := Policies(ctx, c, key, "", ""); !errors.Is(err, ErrTampered) {
				t.Fatalf("Policies after %q: %v, want ErrTampered", tc.sql, err)
			}
		})
	}
}

// policyMACBeforeJoinGroups is policyMAC as it was before join groups
// (migration 0003): rows it authenticated must keep verifying.
func policyMACBeforeJoinGroups(key []byte, p *ColumnPolicy) []byte {
	m := (&mac{}).str("pgonion policy v1").str(p.Schema).str(p.Table).str(p.Column).str(string(p.Policy))
	if p.Capabilities == nil {
		m.int(-1)
	} else {
		m.int(int64(len(p.Capabilities)))
		for _, c := range p.Capabilities {
			m.str(c)
		}
	}
	return m.sum(key)
}

func TestPolicyMACCompatible(t *testing.T) {
	key := make([]byte, 32)
	for _, p := range samplePolicies() {
		old := policyMACBeforeJoinGroups(key, &p)
		if p.JoinGroup == "" {
			if !slices.Equal(policyMAC(key, &p), old) {
				t.Errorf("the MAC of %+v changed", p)
			}
			continue
		}
		if slices.Equal(policyMAC(key, &p), old) {
			t.Errorf("the MAC of %+v does not cover its join group", p)
		}
		// A join group is not confusable with more capabilities.
		q := p
		q.JoinGroup = ""
		q.Capabilities = append(slices.Clone(p.Capabilities), "join group", p.JoinGroup)
		if slices.Equal(policyMAC(key, &p), policyMAC(key, &q)) {
			t.Errorf("%+v and %+v share a MAC", p, q)
		}
	}
}

// TestPolicyFromBeforeJoinGroups: a policy recorded by a proxy that
// predates migration 0004 still verifies after the migration.
func TestPolicyFromBeforeJoinGroups(t *testing.T) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pgtest.DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	all, err := migrations.List(migrations.FS)
	if err != nil {
		t.Fatal(err)
	}
	before := fstest.MapFS{}
	for _, m := range all {
		if m.Version < 4 {
			before[m.Name] = &fstest.MapFile{Data: []byte(m.SQL)}
		}
	}
	if _, err := migrations.Apply(ctx, c, before); err != nil {
		t.Fatal(err)
	}
	d, err := keys.NewDeriver(make([]byte, keys.RootKeySize))
	if err != nil {
		t.Fatal(err)
	}
	key, err := MACKey(d)
	if err != nil {
		t.Fatal(err)
	}
	old := []ColumnPolicy{
		{Schema: "public", Table: "t", Column: "a", Policy: Encrypted, Capabilities: []string{"eq"}},
		{Schema: "public", Table: "t", Column: "b", Policy: Encrypted},
		{Schema: "public", Table: "t", Column: "c", Policy: Sensitive},
	}
	for _, p := range old {
		if _, err := c.Exec(ctx, "INSERT INTO pgonion.policies (schema_name, table_name, column_name, policy, capabilities, mac) VALUES ($1, $2, $3, $4, $5, $6)",
			p.Schema, p.Table, p.Column, string(p.Policy), p.Capabilities, policyMACBeforeJoinGroups(key, &p)); err != nil {
			t.Fatal(err)
		}
	}
	// The proxy's migration hook seals the catalog in 0009's transaction.
	seal := func(ctx context.Context, tx pgx.Tx, m migrations.Migration) error {
		if m.Version == 9 {
			return SealUnsealed(ctx, tx, key)
		}
		return nil
	}
	if applied, err := migrations.ApplyWith(ctx, c, migrations.FS, seal); err != nil || len(applied) == 0 {
		t.Fatalf("migrating: %v, %v", applied, err)
	}
	got, err := Policies(ctx, c, key, "public", "t")
	if err != nil || !slices.EqualFunc(got, old, policyEqual) {
		t.Fatalf("old policies after the migration: %+v, %v", got, err)
	}
}
