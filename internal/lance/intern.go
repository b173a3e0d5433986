package lance

import "sync"

// This file owns how a table's versions hold what they reference: every
// file key and index uuid once per table, each version a list of ids. A
// key is shared by every version from the one that wrote it to the one that
// compacted it away: 10,000 versions of a table of a few hundred files held
// the same strings tens of thousands of times each.

// names interns the keys and uuids of one table's versions (Refresh shares
// them with the table it refreshes).
type names struct {
	mu     sync.RWMutex
	byName map[string]uint32
	all    []string
}

func newNames() *names { return &names{byName: map[string]uint32{}} }

// ids interns ss.
func (n *names) ids(ss []string) []uint32 {
	if len(ss) == 0 {
		return nil
	}
	out := make([]uint32, len(ss))
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, s := range ss {
		id, ok := n.byName[s]
		if !ok {
			id = uint32(len(n.all))
			n.byName[s] = id
			n.all = append(n.all, s)
		}
		out[i] = id
	}
	return out
}

// strings are the names of ids.
func (n *names) strings(ids []uint32) []string {
	if len(ids) == 0 {
		return nil
	}
	out := make([]string, len(ids))
	n.mu.RLock()
	defer n.mu.RUnlock()
	for i, id := range ids {
		out[i] = n.all[id]
	}
	return out
}

// versionRefs is what one version references, as ids in its table's names.
type versionRefs struct {
	names         *names
	keys, indices []uint32
}
