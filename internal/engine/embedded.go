package engine

import (
	"context"
	"slices"

	"github.com/pgonion/pgonion/internal/rewrite"
)

// checkEmbedded refuses SQL hidden in strings (DO blocks, function and
// procedure bodies, the query of query_to_xml or dblink) that could reach
// a table with encrypted columns: the server would run it as written,
// with plaintext constants and without the proxy. While no such table
// exists, nothing is refused.
//
// The rule is conservative: code is refused when it names such a table
// (as a word, anywhere in its text, strings included), the schema
// pgonion, or a function that runs SQL text; when it builds SQL at run
// time (PL/pgSQL EXECUTE, a query argument that is not a constant); or
// when its language is not SQL or PL/pgSQL (the proxy cannot read it).
func (s *session) checkEmbedded(st rewrite.Statement) error {
	emb := rewrite.EmbeddedSQL(st)
	if len(emb) == 0 {
		return nil
	}
	names, err := s.encryptedNames()
	if err != nil || len(names) == 0 {
		return err
	}
	for _, e := range emb {
		switch {
		case e.Text == "":
			return rewrite.Refusal("%s built at run time is not supported while tables with encrypted columns exist: the server would run SQL the proxy cannot see", e.Construct)
		case e.Language != "sql" && e.Language != "plpgsql":
			return rewrite.Refusal("%s in language %s is not supported while tables with encrypted columns exist: the proxy cannot tell which tables its code reaches", e.Construct, e.Language)
		case rewrite.MentionsWord(e.Text, rewrite.ProxySchema):
			return rewrite.Refusal("%s naming schema %s is not supported", e.Construct, rewrite.ProxySchema)
		case e.Language == "plpgsql" && rewrite.MentionsWord(e.Text, "execute"):
			return rewrite.Refusal("dynamic SQL (EXECUTE) in a %s is not supported while tables with encrypted columns exist: the server would run SQL the proxy cannot see", e.Construct)
		}
		for _, n := range names {
			if rewrite.MentionsWord(e.Text, n) {
				return rewrite.Refusal("%s referring to table %s with encrypted columns is not supported: the server would run its SQL on the ciphertexts, with any constants in plaintext", e.Construct, n)
			}
		}
		for _, f := range rewrite.SQLRunningFunctionNames() {
			if rewrite.MentionsWord(e.Text, f) {
				return rewrite.Refusal("%s calling %s is not supported while tables with encrypted columns exist: the server would run SQL the proxy cannot see", e.Construct, f)
			}
		}
	}
	return nil
}

// encryptedNames returns the names of the tables with encrypted columns
// (in the catalog, this session's open transaction, or being created),
// reading the catalog again when this proxy's copy is not trusted.
func (s *session) encryptedNames() ([]string, error) {
	c := s.e.cat
	if !c.trusted() || c.broken.Load() != nil {
		ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
		defer cancel()
		if err := c.refresh(ctx); err != nil {
			return nil, catalogError(err)
		}
	}
	var names []string
	snap := c.snapshot()
	s.mu.Lock()
	if s.txCat != nil {
		snap = s.txCat
	}
	s.mu.Unlock()
	for _, t := range snap.Tables() {
		names = append(names, t.Name)
	}
	c.intentMu.Lock()
	for _, n := range c.intents {
		names = append(names, n)
	}
	c.intentMu.Unlock()
	slices.Sort(names)
	return slices.Compact(names), nil
}
