package roots

// This file owns how replicas split the tables of one root (shard.by:
// table): each table belongs to exactly one shard, chosen as roots are
// (Assign), by rendezvous hashing, here of the root's canonical URI and the
// table's name together. A table's shard depends only on its root, its name
// and the count: every replica, planning the same root, agrees on it
// without asking the others, and the replicas of one count cover every
// table of the root exactly once. The root takes part so that the tables
// of one name (every tenant's "users") do not all land on one replica.

// Share is the tables of one root a replica owns (shard index of count).
// Its zero value, or count 0 or 1, owns every table.
type Share struct {
	root         uint64 // tableHash's prefix: the root's URI and the separator
	index, count int
}

// ShareOf is shard index of count's share of the tables of the root at
// uri. An index outside [0, count) owns nothing (config.Validate rejects
// it).
func ShareOf(uri string, index, count int) Share {
	if count <= 1 {
		return Share{}
	}
	return Share{root: fnvAdd(uriHash(uri), "\x00"), index: index, count: count}
}

// Owns reports whether the share holds table.
func (s Share) Owns(table string) bool {
	if s.count <= 1 {
		return true
	}
	return rendezvous(fnvAdd(s.root, table), s.count) == s.index
}

// Split reports whether the share is one of several: false when it owns
// every table.
func (s Share) Split() bool { return s.count > 1 }

// TableOwner is the shard in [0, count) that owns table of the root at uri
// (0 when count <= 1).
func TableOwner(uri, table string, count int) int {
	if count <= 1 {
		return 0
	}
	return rendezvous(fnvAdd(fnvAdd(uriHash(uri), "\x00"), table), count)
}

// fnvAdd continues an FNV-1a 64 hash h over s: the table's hash is FNV-1a
// of the canonical URI, a NUL (in neither a URI nor a table name) and the
// name, the root's part computed once per root.
func fnvAdd(h uint64, s string) uint64 {
	const prime64 = 1099511628211
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime64
	}
	return h
}
