package catalog

import (
	"context"
	"crypto/hmac"
	"fmt"
	"regexp"
	"slices"
)

// ColumnPolicy is a policy declared for a column before its table is
// created through the proxy.
type ColumnPolicy struct {
	Schema, Table, Column string
	Policy                Policy
	// Capabilities limits an encrypted column's onions ("eq", "ord",
	// "add", "search"); nil means the default policy's (every
	// capability of its type but add and the ord of text).
	Capabilities []string
	// JoinGroup puts the column in a join group ("" for none): the
	// columns of one group share their DET and OPE keys, so the server can
	// compare them with each other (equi-joins, and order with "ord").
	// Only an encrypted column with the "eq" capability can have one (see
	// CheckJoinGroup).
	JoinGroup string
}

var joinGroupName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ValidJoinGroupName reports whether name can name a join group: a
// lowercase identifier of at most 63 characters ([a-z_][a-z0-9_]*).
func ValidJoinGroupName(name string) bool { return joinGroupName.MatchString(name) }

// CheckJoinGroup checks that a column with the given policy and
// capabilities (nil: every capability of its type) may be in join group
// group; "" (no group) is always fine. Only encrypted columns with the
// "eq" capability can be in one: a plain column has no keys to share, and
// a sensitive one never exposes a DET layer. The error does not name the
// column; callers add it.
func CheckJoinGroup(group string, policy Policy, capabilities []string) error {
	switch {
	case group == "":
		return nil
	case !ValidJoinGroupName(group):
		return fmt.Errorf("bad join group name %q: want a lowercase identifier ([a-z_][a-z0-9_]*, at most 63 characters)", group)
	case policy == Plain:
		return fmt.Errorf("join group %q needs an encrypted column; a plain one has no keys to share", group)
	case policy == Sensitive:
		return fmt.Errorf("join group %q needs an encrypted column; a sensitive one never leaves RND, so the server could never compare it with another", group)
	case policy != Encrypted:
		return fmt.Errorf("join group %q needs an encrypted column, not a %s one", group, policy)
	case capabilities != nil && !slices.Contains(capabilities, "eq"):
		return fmt.Errorf("join group %q needs the column's eq capability", group)
	}
	return nil
}

// policyMAC authenticates a policy row. The join group is covered only
// when there is one, so rows written before join groups existed (migration
// 0004) keep verifying; the encoding stays unambiguous because the
// capability list before it is length-prefixed.
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
	if p.JoinGroup != "" {
		m.str("join group").str(p.JoinGroup)
	}
	return m.sum(key)
}

// SetPolicy records (or replaces) the policy of a column.
func SetPolicy(ctx context.Context, tx Execer, macKey []byte, p ColumnPolicy) error {
	return change(ctx, tx, macKey, func() error { return setPolicy(ctx, tx, macKey, p) })
}

func setPolicy(ctx context.Context, tx Execer, macKey []byte, p ColumnPolicy) error {
	switch p.Policy {
	case Plain, Sensitive, Encrypted:
	default:
		return fmt.Errorf("catalog: unknown policy %q", p.Policy)
	}
	if err := CheckJoinGroup(p.JoinGroup, p.Policy, p.Capabilities); err != nil {
		return fmt.Errorf("catalog: the policy of %s.%s.%s: %w", p.Schema, p.Table, p.Column, err)
	}
	var jg *string
	if p.JoinGroup != "" {
		jg = &p.JoinGroup
	}
	_, err := tx.Exec(ctx, `INSERT INTO pgonion.policies (schema_name, table_name, column_name, policy, capabilities, join_group, mac)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (schema_name, table_name, column_name) DO UPDATE SET policy = EXCLUDED.policy, capabilities = EXCLUDED.capabilities,
			join_group = EXCLUDED.join_group, mac = EXCLUDED.mac`,
		p.Schema, p.Table, p.Column, string(p.Policy), p.Capabilities, jg, policyMAC(macKey, &p))
	if err != nil {
		return fmt.Errorf("catalog: recording the policy of %s.%s.%s: %w", p.Schema, p.Table, p.Column, err)
	}
	return nil
}

// DeletePolicy forgets the declared policy of a column.
func DeletePolicy(ctx context.Context, tx Execer, macKey []byte, schema, table, column string) error {
	return change(ctx, tx, macKey, func() error {
		_, err := tx.Exec(ctx, "DELETE FROM pgonion.policies WHERE schema_name = $1 AND table_name = $2 AND column_name = $3", schema, table, column)
		return err
	})
}

// Policies returns the declared policies of one table (every table when
// table is ""), verified with the whole catalog (Load): a row changed,
// deleted or replayed behind the proxy's back gives ErrTampered.
func Policies(ctx context.Context, q Querier, macKey []byte, schema, table string) ([]ColumnPolicy, error) {
	s, err := Load(ctx, q, macKey)
	if err != nil {
		return nil, err
	}
	return s.Policies(schema, table), nil
}

// Policies returns the declared policies of one table (every table when
// table is "").
func (s *Snapshot) Policies(schema, table string) []ColumnPolicy {
	var out []ColumnPolicy
	for _, p := range s.policies {
		if table == "" || p.Schema == schema && p.Table == table {
			out = append(out, p)
		}
	}
	return out
}

// loadPolicies reads every declared policy, verifying each row.
func loadPolicies(ctx context.Context, q Querier, macKey []byte) ([]ColumnPolicy, error) {
	rows, err := q.Query(ctx, `SELECT schema_name, table_name, column_name, policy, capabilities, coalesce(join_group, ''), mac FROM pgonion.policies
		ORDER BY 1, 2, 3`)
	if err != nil {
		return nil, fmt.Errorf("catalog: reading policies: %w", err)
	}
	defer rows.Close()
	var out []ColumnPolicy
	for rows.Next() {
		var p ColumnPolicy
		var pol string
		var m []byte
		if err := rows.Scan(&p.Schema, &p.Table, &p.Column, &pol, &p.Capabilities, &p.JoinGroup, &m); err != nil {
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
