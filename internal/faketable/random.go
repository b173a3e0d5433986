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
		out[fmt.Sprintf("_versions/%d.manifest", v)] = randBytes(rng, 64+rng.IntN(256))
		out[fmt.Sprintf("_transactions/%d-%s.txn", v-1, randHex(rng, 8))] = randBytes(rng, 32+rng.IntN(64))
	}
	out["_versions/latest_version_hint.json"] = fmt.Appendf(nil, `{"version":%d}`, versions)
	out["_indices/"+randHex(rng, 8)+"/index.idx"] = randBytes(rng, 128)
	out["tree/dev/_versions/1.manifest"] = randBytes(rng, 64)
	out["_deletions/0-1-"+randHex(rng, 4)+".arrow"] = randBytes(rng, 48)
	for len(out) < n {
		out["data/"+randHex(rng, 16)+".lance"] = randBytes(rng, 16+rng.IntN(2048))
	}
	return out
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return b
}

func randHex(rng *rand.Rand, n int) string { return hex.EncodeToString(randBytes(rng, n))[:n] }
