package retention

import "github.com/lance-reaper/reaper/internal/lance"

// IndicesInUse are the index uuids a table still uses once the versions
// removed are gone: those of every other version of main, of the detached
// versions and, through base paths naming the table, of every branch. A
// run keeps their _indices/<uuid>/ directories, even empty, as Lance's
// cleanup keeps its retained index directories.
func IndicesInUse(t *lance.Table, removed []uint64) map[string]bool {
	gone := make(map[uint64]bool, len(removed))
	for _, n := range removed {
		gone[n] = true
	}
	in := newRefs()
	for _, v := range t.Versions {
		if !gone[v.Number] {
			in.add(v.Refs())
		}
	}
	for _, v := range t.Detached {
		in.add(v.Refs())
	}
	for _, b := range t.Branches {
		for _, v := range b.Versions {
			in.add(t.MainRefs(v))
		}
	}
	return in.indices
}
