package catalog

import "fmt"

// GroupKey is where the shared keys of a join group, as one column has
// them, come from: a root key generation and the group's key version
// under it. The columns of a group compare on the server only at one
// GroupKey.
type GroupKey struct{ Generation, Version int }

// GroupKey returns the column's position in its group's key history.
func (c *Column) GroupKey() GroupKey {
	return GroupKey{Generation: c.RootGeneration, Version: c.GroupKeyVersion}
}

// Less orders group keys: by generation, then version.
func (k GroupKey) Less(o GroupKey) bool {
	return k.Generation < o.Generation || k.Generation == o.Generation && k.Version < o.Version
}

func (k GroupKey) String() string {
	if k.Generation == 0 {
		return fmt.Sprintf("key version %d", k.Version)
	}
	return fmt.Sprintf("key version %d of root key generation %d", k.Version, k.Generation)
}

// Group is what the catalog says of a join group.
type Group struct {
	// Newest is the newest GroupKey among its encrypted columns.
	Newest GroupKey
	// Format is the cell format its columns share.
	Format int
}

// Groups returns the join groups that have encrypted columns in s.
func (s *Snapshot) Groups() map[string]Group {
	out := map[string]Group{}
	for _, t := range s.tables {
		for i := range t.Columns {
			c := &t.Columns[i]
			if c.JoinGroup == "" || c.Policy == Plain {
				continue
			}
			g, seen := out[c.JoinGroup]
			if !seen || g.Newest.Less(c.GroupKey()) {
				g.Newest = c.GroupKey()
			}
			g.Format = c.CellFormat()
			out[c.JoinGroup] = g
		}
	}
	return out
}

// RotatedGroupKey returns the group key a column of group g at key takes
// when rotated under root key generation gen: the group's newest at gen
// (joining the group's columns rotated before it), or the next version
// when it has that already.
func (g Group) RotatedGroupKey(key GroupKey, gen int) GroupKey {
	next := GroupKey{Generation: gen, Version: g.Newest.Version}
	if g.Newest.Generation > gen {
		next.Generation = g.Newest.Generation
	}
	if key == next || next.Less(key) {
		next.Version = key.Version + 1
	}
	return next
}
