package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// TestReviveRefusesPartlyPurgedTable: a purge that stops half-way (killed,
// or failed on a permanent per-key error) leaves the marker, its purge
// commit and data without manifests. Reviving that would make a live table
// that cannot be opened — partly deleted without its marker. Revive must
// refuse ("partially purged: cannot revive") and change nothing; a later
// purge finishes the table whatever its TTL. A table an older reaper left
// with its manifests gone and no commit is refused too.
func TestReviveRefusesPartlyPurgedTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		s3      bool
		halfway func(t *testing.T, b *backend, f *fixture, tb *table)
		// want is what the refusal says, besides "run purge to finish it".
		want string
	}{
		{"local, killed after the manifests", false, killedAfterManifests, "partially purged: cannot revive"},
		{"s3, killed after the manifests", true, killedAfterManifests, "partially purged: cannot revive"},
		{"local, an older reaper left the manifests gone", false, legacyManifestsGone, "cannot revive"},
		{"s3, purge failed on a permanent per-key error", true, failPurgeAfterManifests, "partially purged: cannot revive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := localBackend(t)
			if tc.s3 {
				b = s3Backend(t, "db")
			}
			f := newFixture(newRand(42), mix{kindDue: 1, kindLive: 1}, [2]int{12, 12})
			f.write(t, b)
			tb := f.tables[0]
			tc.halfway(t, b, f, tb)
			before := take(t, b)
			s := stateOf(tb, before)
			require.True(t, s.partial() && s.manifestsLeft == 0 && s.marker == markerOriginal, "setup: %s", s)
			if !tb.legacy {
				require.Equal(t, commitMatches, s.commit, "setup: %s", s)
			}
			checkSafe(t, f, before, tc.name+": before the revive")

			r := reaper(t, append(append([]string{"revive"}, b.rootArgs("")...), tb.name)...)
			require.Equal(t, 1, r.code, "revive of a partly purged table must fail:\n%s", r)
			out := string(r.stdout) + string(r.stderr)
			require.Contains(t, out, "run purge to finish it", "%s", r)
			require.Contains(t, out, tc.want, "%s", r)
			require.Equal(t, before, take(t, b), "a refused revive changes nothing")

			_, _ = converge(t, b, f, append(purgeArgs(30*time.Second, shortSkew), b.rootArgs("")...), shortSkew, tc.name)
		})
	}
}

// killedAfterManifests leaves the table as a purge killed after its first
// delete batch (the manifests) leaves it: its purge commit, naming the
// marker, and everything but the manifests.
func killedAfterManifests(t *testing.T, b *backend, f *fixture, tb *table) {
	commit, err := json.Marshal(lifecycle.Commit{Owner: "killed-host/9", Generation: 1, CommittedAtMs: time.Now().UnixMilli(), Marker: string(tb.marker)})
	require.NoError(t, err)
	b.putAll(t, map[string][]byte{lifecycle.CommitKey(tb.name): commit})
	deleteManifests(t, b, f, tb)
}

// legacyManifestsGone leaves the table as a purge of an older reaper (no
// commit) killed after the manifests left it.
func legacyManifestsGone(t *testing.T, b *backend, f *fixture, tb *table) {
	tb.legacy = true
	deleteManifests(t, b, f, tb)
}

// deleteManifests deletes the table's manifests, as a purge's first batch.
func deleteManifests(t *testing.T, b *backend, _ *fixture, tb *table) {
	ctx := context.Background()
	dir := lifecycle.TableDir(tb.name)
	for k := range tb.files {
		if isManifestKey(dir, k) {
			require.NoError(t, b.raw.Delete(ctx, k))
		}
	}
}

// failPurgeAfterManifests runs a purge through the proxy with AccessDenied
// on one data file: the manifests go, the purge fails with the rest left,
// its commit and marker kept.
func failPurgeAfterManifests(t *testing.T, b *backend, f *fixture, tb *table) {
	px := newProxy(t, b.srv, 1)
	var victim string
	for k := range tb.files {
		if strings.Contains(k, "/data/") && (victim == "" || k < victim) {
			victim = k
		}
	}
	px.set(faultConfig{keyErrorRate: 1, keyErrorCodes: []string{"AccessDenied"},
		keyFilter: func(key string) bool { return strings.HasSuffix(key, victim) }})
	r := reaper(t, append(purgeArgs(30*time.Second, shortSkew), b.rootArgs(px.URL())...)...)
	require.Equal(t, 1, r.code, "%s", r)
	require.Contains(t, report(t, r).outcomes()[tb.name], "AccessDenied", "%s", r)
	checkSafe(t, f, take(t, b), fmt.Sprintf("after the failed purge of %s", tb.name))
}
