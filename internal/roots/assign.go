package roots

import (
	"hash/fnv"

	"github.com/lance-reaper/reaper/internal/objstore/all"
)

// Assign returns the roots shard index of count owns, in input order. Each
// root belongs to exactly one shard, chosen by rendezvous (highest random
// weight) hashing of its canonical URI: the shard with the highest
// score(uri, shard) wins. The assignment depends only on the URI and count,
// never on the other roots, and growing count from N to N+1 moves only the
// roots the new shard wins, about 1/(N+1) of them.
//
// count 0 or 1 means no sharding: every root. An index outside [0, count)
// owns nothing (config.Validate rejects it).
func Assign(roots []Root, index, count int) []Root {
	if count <= 1 {
		return roots
	}
	if index < 0 || index >= count {
		return nil
	}
	var out []Root
	for _, r := range roots {
		if Owner(r.URI, count) == index {
			out = append(out, r)
		}
	}
	return out
}

// Owner is the shard in [0, count) that owns uri (0 when count <= 1).
func Owner(uri string, count int) int {
	if count <= 1 {
		return 0
	}
	return rendezvous(uriHash(uri), count)
}

// rendezvous is the shard in [0, count) with the highest score for h.
func rendezvous(h uint64, count int) int {
	best, bestScore := 0, uint64(0)
	for i := range count {
		if s := score(h, i); i == 0 || s > bestScore {
			best, bestScore = i, s
		}
	}
	return best
}

// uriHash is FNV-1a 64 of the canonical URI, so "/data/db",
// "file:///data/db/" and "file:///data/db" hash alike.
func uriHash(uri string) uint64 {
	if loc, err := all.ParseLocation(uri); err == nil {
		uri = loc.String()
	}
	f := fnv.New64a()
	f.Write([]byte(uri))
	return f.Sum64()
}

// score mixes the URI hash with the shard number (splitmix64 finalizer), so
// every shard draws an independent, uniform weight.
func score(h uint64, shard int) uint64 {
	z := h ^ (uint64(shard)+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
