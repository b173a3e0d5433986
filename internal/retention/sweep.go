package retention

import (
	"path"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lance"
)

// decide is Lance's cleanup_file_if_not_referenced for one listed file of a
// managed directory: whether to delete it, why, and whether a removed
// version referenced it. A file no manifest references is deleted only
// when it is not "maybe in progress" (older than UnverifiedAfter by the
// store's clock, or DeleteUnverified). Lance lists each directory only up
// to a modification time (listed); a file past it is kept this pass.
func (pl *planner) decide(key string, modified time.Time) (string, bool, bool) {
	if !pl.listed(key, modified) {
		return "", false, false
	}
	inProgress := !pl.p.DeleteUnverified && !modified.Before(pl.now.Add(-pl.p.unverifiedAfter()))
	switch {
	case strings.HasPrefix(key, lance.VersionsDir+".tmp"):
		// A manifest a writer never committed: unverified by nature.
		return pl.unverified(inProgress)
	case strings.HasPrefix(key, lance.IndicesDir):
		uuid, _, nested := strings.Cut(strings.TrimPrefix(key, lance.IndicesDir), "/")
		if !nested {
			return "", false, false
		}
		return pl.byReference(pl.referenced.indices[uuid], pl.verified.indices[uuid], inProgress)
	}
	switch ext(key) {
	case "lance":
		if strings.HasPrefix(key, lance.DataDir) {
			return pl.byReference(pl.referenced.keys[key], pl.verified.keys[key], inProgress)
		}
	case "arrow", "bin":
		if strings.HasPrefix(key, lance.DeletionsDir) {
			return pl.byReference(pl.referenced.keys[key], pl.verified.keys[key], inProgress)
		}
	case "txn":
		if strings.HasPrefix(key, lance.TransactionsDir) {
			return pl.byReference(pl.referenced.keys[key], pl.verified.keys[key], inProgress)
		}
	}
	// Anything else (manifests, whose removal is planned per version, the
	// version hint, files of unknown kinds) is left alone.
	return "", false, false
}

// byReference: a kept version's file stays; a file a removed version
// referenced goes; a file nobody references goes unless it may be a write
// in progress.
func (pl *planner) byReference(referenced, verified, inProgress bool) (string, bool, bool) {
	switch {
	case referenced:
		return "", false, false
	case verified:
		return WhyVerified, true, true
	default:
		return pl.unverified(inProgress)
	}
}

func (pl *planner) unverified(inProgress bool) (string, bool, bool) {
	if inProgress {
		return "", false, false
	}
	if pl.p.DeleteUnverified {
		return WhyUnverified + " (delete_unverified)", false, true
	}
	return WhyUnverified + " and it is older than " + pl.p.unverifiedAfter().String(), false, true
}

// listed is Lance's listing cutoff (CleanupInspection::listing_unmodified_since):
// _indices/ is listed whole; every other directory only up to the earliest
// kept version's timestamp, unless a removed version is newer than it (a
// tag kept an old version; upstream's fix of the leak lance#8705). Files
// written after the earliest kept version are left for a later pass, even
// with DeleteUnverified: the LanceDB 0.39 client (Lance 12) keeps them, as
// the oracle shows (later Lance lists data/ further).
func (pl *planner) listed(key string, modified time.Time) bool {
	if strings.HasPrefix(key, lance.IndicesDir) {
		return true
	}
	if pl.latestRemoved.After(pl.earliestKept) {
		return true
	}
	return !modified.After(pl.earliestKept)
}

// ext is the extension of a key's last segment, without the dot.
func ext(key string) string {
	e := path.Ext(key)
	return strings.TrimPrefix(e, ".")
}
