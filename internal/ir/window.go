package ir

// Window is a window function's OVER clause: its partitions, order and
// frame.
type Window struct {
	Partition []*Expr
	Order     []AggOrder
	// Frame is the frame clause; nil is the default frame (RANGE
	// UNBOUNDED PRECEDING to the current row and its peers; the whole
	// partition without ORDER BY).
	Frame *Frame
}

// FrameMode is how a frame's bounds count: rows, peer groups, or values
// of the ORDER BY key (RANGE).
type FrameMode int

func (m FrameMode) String() string {
	return map[FrameMode]string{FrameRange: "RANGE", FrameRows: "ROWS", FrameGroups: "GROUPS"}[m]
}

// Frame modes.
const (
	FrameRange FrameMode = iota
	FrameRows
	FrameGroups
)

// BoundKind is where a frame starts or ends.
type BoundKind int

// Frame bounds.
const (
	UnboundedPreceding BoundKind = iota
	OffsetPreceding              // Offset rows or groups before the current one
	CurrentRow                   // the current row (RANGE, GROUPS: and its peers)
	OffsetFollowing              // Offset rows or groups after the current one
	UnboundedFollowing
)

// FrameExclusion is a frame's EXCLUDE clause.
type FrameExclusion int

// Frame exclusions.
const (
	ExcludeNoOthers FrameExclusion = iota
	ExcludeCurrentRow
	ExcludeGroup // the current row and its peers
	ExcludeTies  // the current row's peers, not the row itself
)

// FrameBound is one end of a frame; Offset (a constant or parameter:
// bigint for ROWS and GROUPS, of the ORDER BY key's type for RANGE) only
// for OffsetPreceding and OffsetFollowing.
type FrameBound struct {
	Kind   BoundKind
	Offset *Expr
}

// Frame is an explicit frame clause.
type Frame struct {
	Mode       FrameMode
	Start, End FrameBound
	Exclude    FrameExclusion
}
