package exec

import (
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgonion/pgonion/internal/onion"
	"github.com/pgonion/pgonion/internal/pgjson"
	"github.com/pgonion/pgonion/internal/rewrite"
)

// jsonb in the scalar library: the operators (named by their symbols, as
// the split-execution builder writes them), computed by pgjson. The
// builder passes the text[] operand of #>, #>>, ?| and ?& as one argument
// per element.

var tJSONB = onion.Type{Base: onion.JSONB}

// jsonOf parses a jsonb value (jsonb_out's text, as every jsonb value the
// proxy holds).
func jsonOf(a Value) (*pgjson.Value, error) { return pgjson.Parse(a.Str) }

// jsonVal is a jsonb result; nil is NULL.
func jsonVal(v *pgjson.Value) Value {
	if v == nil {
		return NullOf(tJSONB)
	}
	return Value{Type: tJSONB, Str: v.String()}
}

// jsonText is a ->> result; nil and JSON null are NULL.
func jsonText(v *pgjson.Value) Value {
	if v == nil {
		return NullOf(TypeText)
	}
	s, ok := v.Text()
	if !ok {
		return NullOf(TypeText)
	}
	return textVal(s)
}

func isJSONB(t onion.Type) bool { return t.Base == onion.JSONB }

// fieldSig types jsonb -> text|integer (and ->>): an untyped literal is
// a key.
func fieldSig(name string, result onion.Type) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != 2 || args[0] != tUnknown && !isJSONB(args[0]) {
			return nil, result, refuseArgs(name, args)
		}
		key := TypeText
		switch {
		case args[1] == tUnknown, isTextType(args[1]):
		case args[1].Base == onion.Integer || args[1].Base == onion.SmallInt:
			key = TypeInt4
		default:
			return nil, result, refuseArgs(name, args)
		}
		return []onion.Type{tJSONB, key}, result, nil
	}
}

// pathSig types jsonb followed by text arguments (#>, #>>, ?|, ?&), or by
// one text[] (a parameter).
func pathSig(name string, result onion.Type) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) < 1 || args[0] != tUnknown && !isJSONB(args[0]) {
			return nil, result, refuseArgs(name, args)
		}
		if len(args) == 2 && args[1] == TypeTextArray {
			return []onion.Type{tJSONB, TypeTextArray}, result, nil
		}
		params := []onion.Type{tJSONB}
		for _, a := range args[1:] {
			if a != tUnknown && !isTextType(a) {
				return nil, result, refuseArgs(name, args)
			}
			params = append(params, TypeText)
		}
		return params, result, nil
	}
}

// jsonField computes -> and ->>.
func jsonField(a []Value) (*pgjson.Value, error) {
	v, err := jsonOf(a[0])
	if err != nil {
		return nil, err
	}
	if isTextType(a[1].Type) {
		return v.Field(str(a[1])), nil
	}
	return v.Element(a[1].Int), nil
}

// textArgs are the text arguments after the first, or the elements of a
// text[] argument (nil for a NULL element).
func textArgs(a []Value) ([]*string, error) {
	if len(a) == 2 && a[1].Type == TypeTextArray {
		elems, err := TypeTextArray.ArrayElements(onion.BytesValue([]byte(a[1].Str)))
		if err != nil {
			return nil, err
		}
		out := make([]*string, len(elems))
		for i, e := range elems {
			if !e.IsNull() {
				s := e.Str()
				out[i] = &s
			}
		}
		return out, nil
	}
	out := make([]*string, len(a)-1)
	for i, k := range a[1:] {
		if !k.Null {
			s := str(k)
			out[i] = &s
		}
	}
	return out, nil
}

// jsonPath computes #> and #>>: NULL for a NULL step.
func jsonPath(a []Value) (*pgjson.Value, error) {
	v, err := jsonOf(a[0])
	if err != nil {
		return nil, err
	}
	args, err := textArgs(a)
	if err != nil {
		return nil, err
	}
	steps := make([]string, len(args))
	for i, s := range args {
		if s == nil {
			return nil, nil
		}
		steps[i] = *s
	}
	return v.Path(steps), nil
}

func jsonFuncs() map[string]*scalarFunc {
	jsonb2 := []onion.Type{tJSONB, tJSONB}
	contains := func(name string, flip bool) *scalarFunc {
		return &scalarFunc{sig: fixedJSON(name, jsonb2, TypeBool), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			x, err := jsonOf(a[0])
			if err != nil {
				return Value{}, err
			}
			y, err := jsonOf(a[1])
			if err != nil {
				return Value{}, err
			}
			if flip {
				x, y = y, x
			}
			return boolVal(x.Contains(y)), nil
		}}
	}
	exists := func(name string, all bool) *scalarFunc {
		return &scalarFunc{sig: pathSig(name, TypeBool), nulls: true, call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			if a[0].Null {
				return NullOf(TypeBool), nil
			}
			v, err := jsonOf(a[0])
			if err != nil {
				return Value{}, err
			}
			keys, err := textArgs(a)
			if err != nil {
				return Value{}, err
			}
			if all {
				return boolVal(v.ExistsAll(keys)), nil
			}
			return boolVal(v.ExistsAny(keys)), nil
		}}
	}
	funcs := map[string]*scalarFunc{
		"->": {sig: fieldSig("->", tJSONB), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			v, err := jsonField(a)
			return jsonVal(v), err
		}},
		"->>": {sig: fieldSig("->>", TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			v, err := jsonField(a)
			return jsonText(v), err
		}},
		"#>": {sig: pathSig("#>", tJSONB), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			v, err := jsonPath(a)
			return jsonVal(v), err
		}},
		"#>>": {sig: pathSig("#>>", TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			v, err := jsonPath(a)
			return jsonText(v), err
		}},
		"@>": contains("@>", false),
		"<@": contains("<@", true),
		"?": {sig: fixedJSON("?", []onion.Type{tJSONB, TypeText}, TypeBool), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			v, err := jsonOf(a[0])
			if err != nil {
				return Value{}, err
			}
			return boolVal(v.Exists(str(a[1]))), nil
		}},
		"?|": exists("?|", false),
		"?&": exists("?&", true),
		"jsonb_typeof": {sig: fixedJSON("jsonb_typeof", []onion.Type{tJSONB}, TypeText), call: func(_ *Evaluator, a []Value, _ onion.Type) (Value, error) {
			v, err := jsonOf(a[0])
			if err != nil {
				return Value{}, err
			}
			return textVal([...]string{"null", "string", "number", "boolean", "array", "object"}[v.Kind]), nil
		}},
	}
	for name, fn := range buildFuncs() {
		funcs[name] = fn
	}
	return funcs
}

// fixedJSON types a call of fixed jsonb and text parameters; an untyped
// literal takes the parameter's type.
func fixedJSON(name string, params []onion.Type, result onion.Type) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if len(args) != len(params) {
			return nil, result, refuseArgs(name, args)
		}
		for i, a := range args {
			switch p := params[i]; {
			case a == tUnknown:
			case isJSONB(p) && isJSONB(a), isTextType(p) && isTextType(a):
			default:
				return nil, result, refuseArgs(name, args)
			}
		}
		return params, result, nil
	}
}

// castJSON is jsonb::numeric, ::integer types, ::double precision and
// ::boolean: the value must be a JSON number (boolean), as PostgreSQL's
// jsonb_numeric family requires.
func castJSON(ev *Evaluator, x Value, to onion.Type) (Value, error) {
	v, err := jsonOf(x)
	if err != nil {
		return Value{}, err
	}
	if to.Base == onion.Boolean {
		b, err := v.Boolean()
		return boolVal(b), err
	}
	name := map[onion.Base]string{onion.SmallInt: "smallint", onion.Integer: "integer", onion.BigInt: "bigint", onion.Float8: "double precision"}[to.Base]
	if name == "" {
		name = "numeric"
	}
	d, err := v.Numeric(name)
	if err != nil {
		return Value{}, err
	}
	return Cast(ev, []Value{{Type: TypeNumeric, Num: d}}, to)
}

// buildSig types jsonb_build_object (pairs) and jsonb_build_array: any
// argument of a type toJSON converts; untyped literals are text.
func buildSig(name string, pairs bool) func([]onion.Type) ([]onion.Type, onion.Type, error) {
	return func(args []onion.Type) ([]onion.Type, onion.Type, error) {
		if pairs && len(args)%2 != 0 {
			return nil, tJSONB, &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: "argument list must have even number of elements",
				Hint: "The arguments of jsonb_build_object() must consist of alternating keys and values."}
		}
		params := make([]onion.Type, len(args))
		for i, a := range args {
			params[i] = a
			if a == tUnknown {
				params[i] = TypeText
				continue
			}
			if !jsonConvertible(a) {
				return nil, tJSONB, rewrite.Refusal("%s of a value of type %s is not supported in a query the proxy computes", name, a)
			}
		}
		return params, tJSONB, nil
	}
}

// jsonConvertible reports whether toJSON converts values of type t.
func jsonConvertible(t onion.Type) bool {
	k, err := KindOf(t)
	if err != nil {
		return false
	}
	switch k {
	case KindText, KindInt, KindNumeric, KindFloat, KindBool, KindJSONB, KindUUID:
		return true
	}
	return false
}

// toJSON is datum_to_jsonb for the types jsonConvertible takes: numbers
// as JSON numbers (NaN and the infinities as strings), booleans, jsonb
// nested, anything else as the string of its text output.
func toJSON(ev *Evaluator, a Value) (*pgjson.Value, error) {
	if a.Null {
		return &pgjson.Value{Kind: pgjson.Null}, nil
	}
	k, _ := KindOf(a.Type)
	switch k {
	case KindJSONB:
		return jsonOf(a)
	case KindBool:
		return &pgjson.Value{Kind: pgjson.Bool, True: a.Int != 0}, nil
	case KindInt, KindNumeric, KindFloat:
		s := a.Text(ev.Env)
		if v, err := pgjson.Parse(s); err == nil && v.Kind == pgjson.Number {
			return v, nil
		}
		return &pgjson.Value{Kind: pgjson.String, Str: s}, nil
	case KindText:
		return &pgjson.Value{Kind: pgjson.String, Str: str(a)}, nil
	}
	return &pgjson.Value{Kind: pgjson.String, Str: a.Text(ev.Env)}, nil
}

func buildFuncs() map[string]*scalarFunc {
	return map[string]*scalarFunc{
		"jsonb_build_object": {sig: buildSig("jsonb_build_object", true), nulls: true, call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			obj := &pgjson.Value{Kind: pgjson.Object}
			for i := 0; i < len(a); i += 2 {
				if a[i].Null {
					return Value{}, &pgconn.PgError{Severity: "ERROR", Code: "22023", Message: fmt.Sprintf("argument %d: key must not be null", i+1)}
				}
				v, err := toJSON(ev, a[i+1])
				if err != nil {
					return Value{}, err
				}
				key := str(a[i])
				if k, _ := KindOf(a[i].Type); k != KindText {
					key = a[i].Text(ev.Env)
				}
				obj.Keys, obj.Items = append(obj.Keys, key), append(obj.Items, v)
			}
			return jsonVal(obj.Normalized()), nil
		}},
		"jsonb_build_array": {sig: buildSig("jsonb_build_array", false), nulls: true, call: func(ev *Evaluator, a []Value, _ onion.Type) (Value, error) {
			arr := &pgjson.Value{Kind: pgjson.Array}
			for _, x := range a {
				v, err := toJSON(ev, x)
				if err != nil {
					return Value{}, err
				}
				arr.Items = append(arr.Items, v)
			}
			return jsonVal(arr), nil
		}},
	}
}
