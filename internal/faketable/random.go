package faketable

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
)

// Random is a table of about n objects in Lance's layout with bodies drawn
// from rng: manifests and their transactions, a version hint, an index, a
// branch, a deletion file and data files of random sizes. The chaos suites
// use it, where a seed must replay the same tables; Shape is the
// deterministic one for the rest.
func Random(rng *rand.Rand, n int) map[string][]byte {
	out := map[string][]byte{}
	versions := max(1, n/5)
	for v := 1; v <= versions; v++ {
		out[fmt.Sprintf("_versions/%d.manifest", v)] = RandBytes(rng, 64+rng.IntN(256))
		out[fmt.Sprintf("_transactions/%d-%s.txn", v-1, RandHex(rng, 8))] = RandBytes(rng, 32+rng.IntN(64))
	}
	out["_versions/latest_version_hint.json"] = fmt.Appendf(nil, `{"version":%d}`, versions)
	out["_indices/"+RandHex(rng, 8)+"/index.idx"] = RandBytes(rng, 128)
	out["tree/dev/_versions/1.manifest"] = RandBytes(rng, 64)
	out["_deletions/0-1-"+RandHex(rng, 4)+".arrow"] = RandBytes(rng, 48)
	for len(out) < n {
		out["data/"+RandHex(rng, 16)+".lance"] = RandBytes(rng, 16+rng.IntN(2048))
	}
	return out
}

// RandBytes is n bytes drawn from rng.
func RandBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

// RandHex is n hex digits drawn from rng.
func RandHex(rng *rand.Rand, n int) string { return hex.EncodeToString(RandBytes(rng, n))[:n] }
