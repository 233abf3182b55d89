package rewrite

import "google.golang.org/protobuf/reflect/protoreflect"

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
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := range l.Len() {
				f(l.Get(i).Message())
			}
		case fd.Message() != nil && !fd.IsMap():
			f(v.Message())
		}
		return true
	})
}
