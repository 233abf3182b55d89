package catalog

import (
	"context"
	"crypto/hmac"
	"fmt"
)

// ColumnPolicy is a policy declared for a column before its table is
// created through the proxy.
type ColumnPolicy struct {
	Schema, Table, Column string
	Policy                Policy
	// Capabilities limits an encrypted column's onions ("eq", "ord",
	// "add", "search"); nil means every capability of its type.
	Capabilities []string
}

func policyMAC(key []byte, p *ColumnPolicy) []byte {
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

// SetPolicy records (or replaces) the policy of a column.
func SetPolicy(ctx context.Context, tx Execer, macKey []byte, p ColumnPolicy) error {
	switch p.Policy {
	case Plain, Sensitive, Encrypted:
	default:
		return fmt.Errorf("catalog: unknown policy %q", p.Policy)
	}
	_, err := tx.Exec(ctx, `INSERT INTO pgonion.policies (schema_name, table_name, column_name, policy, capabilities, mac)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (schema_name, table_name, column_name) DO UPDATE SET policy = EXCLUDED.policy, capabilities = EXCLUDED.capabilities, mac = EXCLUDED.mac`,
		p.Schema, p.Table, p.Column, string(p.Policy), p.Capabilities, policyMAC(macKey, &p))
	if err != nil {
		return fmt.Errorf("catalog: recording the policy of %s.%s.%s: %w", p.Schema, p.Table, p.Column, err)
	}
	return nil
}

// DeletePolicy forgets the declared policy of a column.
func DeletePolicy(ctx context.Context, tx Execer, schema, table, column string) error {
	_, err := tx.Exec(ctx, "DELETE FROM pgonion.policies WHERE schema_name = $1 AND table_name = $2 AND column_name = $3", schema, table, column)
	return err
}

// Policies returns the declared policies of one table (every table when
// table is ""), verified: a row changed behind the proxy's back gives
// ErrTampered.
//
// Warning: the rows are authenticated one by one, so a row deleted on the
// server goes unnoticed; the column then gets the deployment's default
// policy (which encrypts, unless the deployment says otherwise).
func Policies(ctx context.Context, q Querier, macKey []byte, schema, table string) ([]ColumnPolicy, error) {
	rows, err := q.Query(ctx, `SELECT schema_name, table_name, column_name, policy, capabilities, mac FROM pgonion.policies
		WHERE ($2 = '' OR (schema_name = $1 AND table_name = $2)) ORDER BY 1, 2, 3`, schema, table)
	if err != nil {
		return nil, fmt.Errorf("catalog: reading policies: %w", err)
	}
	defer rows.Close()
	var out []ColumnPolicy
	for rows.Next() {
		var p ColumnPolicy
		var pol string
		var m []byte
		if err := rows.Scan(&p.Schema, &p.Table, &p.Column, &pol, &p.Capabilities, &m); err != nil {
			return nil, fmt.Errorf("catalog: reading policies: %w", err)
		}
		p.Policy = Policy(pol)
		if !hmac.Equal(m, policyMAC(macKey, &p)) {
			return nil, fmt.Errorf("%w: the policy of %s.%s.%s does not authenticate", ErrTampered, p.Schema, p.Table, p.Column)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
