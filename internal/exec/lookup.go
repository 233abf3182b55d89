package exec

import (
	"fmt"
	"strings"

	"github.com/pgonion/pgonion/internal/ir"
	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// LookupTable is a decorrelated subquery's value per key
// (ir.Lookup), keyed as GROUP BY keys are (keyOf): 1 and 1.0 are
// one key, as they are equal for PostgreSQL's =.
type LookupTable struct {
	keys []onion.Type
	t    onion.Type // the value's
	vals map[string]Value
}

func NewLookupTable(l *ir.Lookup, env onion.Env) (*LookupTable, error) {
	types := make([]onion.Type, len(l.Result.Types))
	for i, name := range l.Result.Types {
		t, ok := TypeOfName(name)
		if !ok {
			return nil, rewrite.Refusal("a correlated subquery with values of type %s cannot be evaluated by the proxy yet", name)
		}
		types[i] = t
	}
	lt := &LookupTable{keys: types[:l.Keys], t: types[l.Keys], vals: make(map[string]Value, len(l.Result.Rows))}
	var key strings.Builder
rows:
	for _, row := range l.Result.Rows {
		if len(row) != len(types) {
			return nil, fmt.Errorf("exec: a lookup row has %d values for %d columns", len(row), len(types))
		}
		key.Reset()
		for i, t := range lt.keys {
			if row[i] == nil {
				continue rows // = never matches NULL
			}
			v, err := textValue(t, *row[i], env)
			if err != nil {
				return nil, err
			}
			key.WriteString(v.KeyOf(env))
			key.WriteByte(0)
		}
		v := NullOf(lt.t)
		if raw := row[l.Keys]; raw != nil {
			var err error
			if v, err = textValue(lt.t, *raw, env); err != nil {
				return nil, err
			}
		}
		lt.vals[key.String()] = v
	}
	return lt, nil
}

// textValue is the value of a column of type t in text format.
func textValue(t onion.Type, s string, env onion.Env) (Value, error) {
	v, err := t.ParseText([]byte(s), env)
	if err != nil {
		return Value{}, err
	}
	return FromOnion(t, v, env)
}

// lookupType is the type of a lookup's values, once its keys are checked
// to compare with the enclosing query's as PostgreSQL's = would.
func (ev *Evaluator) lookupType(e *ir.Expr) (onion.Type, error) {
	lt := ev.lookups[e.Lookup]
	if lt == nil {
		return onion.Type{}, fmt.Errorf("exec: a lookup was not built")
	}
	for i, a := range e.Args {
		t, err := ev.TypeOf(a)
		if err != nil {
			return t, err
		}
		k, err := KindOf(t)
		if err != nil {
			return t, err
		}
		lk, err := KindOf(lt.keys[i])
		if err != nil {
			return t, err
		}
		numeric := func(k Kind) bool { return k == KindInt || k == KindNumeric }
		if k != lk && !(numeric(k) && numeric(lk)) {
			return t, rewrite.Refusal("a correlated subquery compares %s with %s, which the proxy cannot evaluate", lt.keys[i], t)
		}
	}
	return lt.t, nil
}

// lookup is the value of a lookup for the keys of the row in sc (NULL
// when a key is NULL or the subquery had no rows for them).
func (ev *Evaluator) lookup(e *ir.Expr, sc *Scope) (Value, error) {
	lt := ev.lookups[e.Lookup]
	var key strings.Builder
	for _, a := range e.Args {
		v, err := ev.Eval(a, sc)
		if err != nil {
			return v, err
		}
		if v.Null {
			return NullOf(lt.t), nil
		}
		key.WriteString(v.KeyOf(ev.Env))
		key.WriteByte(0)
	}
	if v, ok := lt.vals[key.String()]; ok {
		return v, nil
	}
	return NullOf(lt.t), nil
}
