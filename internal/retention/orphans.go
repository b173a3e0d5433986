package retention

import (
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lance"
)

// OrphanTimes are the LastModified times of the files of t's managed
// directories that no manifest references (main, detached, branches), the
// manifests apart: each may be deleted as unverified once it is older than
// UnverifiedAfter. It over-counts (a kind of file cleanup never plans is
// counted too): a caller that waits for the earliest of them waits no
// longer than it must.
func OrphanTimes(t *lance.Table) []time.Time {
	in := newRefs()
	for _, vs := range [][]lance.Version{t.Versions, t.Detached} {
		for _, v := range vs {
			in.add(v.Refs())
		}
	}
	for _, b := range t.Branches {
		for _, v := range b.Versions {
			in.add(t.MainRefs(v))
		}
	}
	var out []time.Time
	for _, o := range t.Objects {
		switch {
		case strings.HasPrefix(o.Key, lance.VersionsDir) && !strings.HasPrefix(o.Key, lance.VersionsDir+".tmp"):
			continue // a manifest, or the version hint
		case in.keys[o.Key]:
			continue
		case strings.HasPrefix(o.Key, lance.IndicesDir):
			uuid, _, _ := strings.Cut(strings.TrimPrefix(o.Key, lance.IndicesDir), "/")
			if in.indices[uuid] {
				continue
			}
		}
		out = append(out, o.LastModified)
	}
	return out
}
