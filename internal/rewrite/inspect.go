package rewrite

import (
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// inspect walks a parse tree depth-first in field order: it calls f on m
// and, when f returns true, on each message below m (list elements
// included). Returning false skips the messages below; to stop the whole
// walk, f must keep returning false once it is done.
func inspect(m protoreflect.Message, f func(protoreflect.Message) bool) {
	if f(m) {
		children(m, func(c protoreflect.Message) { inspect(c, f) })
	}
}

// children calls f on each message directly below m (the elements of
// message lists and the set message fields), in field order. For walks
// that carry state down the tree; inspect covers the rest.
func children(m protoreflect.Message, f func(protoreflect.Message)) {
	for _, c := range messageFields(m.Descriptor()) {
		switch {
		case c.oneof != nil:
			// Node is one oneof of some 250 message fields: ask which
			// is set rather than test each.
			if fd := m.WhichOneof(c.oneof); fd != nil && fd.Message() != nil {
				f(m.Get(fd).Message())
			}
		case c.field.IsList():
			if !m.Has(c.field) {
				continue
			}
			l := m.Get(c.field).List()
			for i := range l.Len() {
				f(l.Get(i).Message())
			}
		case m.Has(c.field):
			f(m.Get(c.field).Message())
		}
	}
}

// child is a field of a message type that may hold messages: a message
// or message list field (maps excepted), or a oneof.
type child struct {
	field protoreflect.FieldDescriptor
	oneof protoreflect.OneofDescriptor
}

// messageFields are the children of a message type, in field order (a
// oneof where its first field is). Walking them instead of Range skips
// the scalar fields, most of a parse tree's (locations, flags, names).
func messageFields(md protoreflect.MessageDescriptor) []child {
	if v, ok := fieldCache.Load(md); ok {
		return v.([]child)
	}
	var out []child
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil {
			if od.Fields().Get(0) == fd {
				out = append(out, child{oneof: od})
			}
			continue
		}
		if fd.Message() != nil && !fd.IsMap() {
			out = append(out, child{field: fd})
		}
	}
	fieldCache.Store(md, out)
	return out
}

// fieldCache maps a message descriptor to its messageFields; parse trees
// have a few hundred message types.
var fieldCache sync.Map
