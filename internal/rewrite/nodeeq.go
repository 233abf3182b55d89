package rewrite

import (
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// sameNode reports whether two parse trees are the same expression,
// wherever in the statement each was written (their location fields
// aside), as PostgreSQL's equal() compares them.
func sameNode(a, b *pg_query.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := proto.Clone(a), proto.Clone(b)
	clearLocations(x.ProtoReflect())
	clearLocations(y.ProtoReflect())
	return proto.Equal(x, y)
}

// clearLocations zeroes every "location" field of m and its descendants.
func clearLocations(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Name() == "location" && fd.Kind() == protoreflect.Int32Kind:
			m.Clear(fd)
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				clearLocations(l.Get(i).Message())
			}
		case fd.Message() != nil && !fd.IsMap():
			clearLocations(v.Message())
		}
		return true
	})
}
