//go:build !fuzzonly

package lifecycle

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// ddbRoot is a fresh s3+ddb:// root, its store as forEachBackend opens
// one, and the DynamoDB server its rows are in.
func ddbRoot(t *testing.T) (objstore.Store, *objstoretest.DDBServer) {
	t.Helper()
	r := objstoretest.S3DDBStore.NewRoot(t)
	return objstoretest.NewClockStore(retrying(t, r)), r.DDB
}

// putRow writes a row as Lance's DynamoDB commit store does: base_uri the
// table's key path in the bucket, path its V2 manifest.
func putRow(t *testing.T, ddb *objstoretest.DDBServer, baseURI string, version uint64, path string) {
	t.Helper()
	if path == "" {
		path = fmt.Sprintf("%s/_versions/%020d.manifest", baseURI, ^uint64(0)-version)
	}
	_, err := ddb.Client.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: aws.String(ddb.Table),
		Item: map[string]types.AttributeValue{
			"base_uri":  &types.AttributeValueMemberS{Value: baseURI},
			"version":   &types.AttributeValueMemberN{Value: strconv.FormatUint(version, 10)},
			"path":      &types.AttributeValueMemberS{Value: path},
			"committer": &types.AttributeValueMemberS{Value: "lancedb"},
			"size":      &types.AttributeValueMemberN{Value: "512"},
		},
	})
	require.NoError(t, err)
}

// ddbRows counts the commit table's rows by base_uri.
func ddbRows(t *testing.T, ddb *objstoretest.DDBServer) map[string]int {
	t.Helper()
	got := map[string]int{}
	in := &dynamodb.ScanInput{TableName: aws.String(ddb.Table)}
	for {
		out, err := ddb.Client.Scan(context.Background(), in)
		require.NoError(t, err)
		for _, item := range out.Items {
			got[item["base_uri"].(*types.AttributeValueMemberS).Value]++
		}
		if len(out.LastEvaluatedKey) == 0 {
			return got
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// TestPurgeDeletesCommitRows: a purge of an s3+ddb:// table deletes every
// row of its base_uri (more than one delete batch), and only those: tables
// whose names are prefixes of each other, a table nested under it, the
// same table under another root prefix keep theirs.
func TestPurgeDeletesCommitRows(t *testing.T) {
	ctx := context.Background()
	s, ddb := ddbRoot(t)
	c := &clock{}
	ns := newNS(t, s, c)
	lanceTable(t, s, "x", 2)
	lanceTable(t, s, "x2", 1)
	const versions = 60
	for v := uint64(1); v <= versions; v++ {
		putRow(t, ddb, "lancedb/prod/x.lance", v, "")
	}
	others := map[string]int{
		"lancedb/prod/x2.lance":        3,
		"lancedb/prod/x.lance2":        1,
		"lancedb/prod/x.lance/y.lance": 2,
		"lancedb/prod2/x.lance":        2,
		"lancedb/prod":                 1,
		"x.lance":                      1,
	}
	for b, n := range others {
		for v := 1; v <= n; v++ {
			putRow(t, ddb, b, uint64(v), "")
		}
	}
	_, err := ns.Drop(ctx, "x", time.Hour)
	require.NoError(t, err)
	c.Advance(time.Hour + time.Second)

	res, err := ns.Purge(ctx, "x", PurgeOptions{})
	require.NoError(t, err)
	require.Equal(t, OutcomePurged, res.Outcome)
	require.Equal(t, others, ddbRows(t, ddb), "the table's rows are gone, every other base_uri keeps its own")
	require.Equal(t, StateNotFound, statusOf(t, ns, "x").State)
}

// TestPurgeOrphanMarkerDeletesCommitRows: rows outlive their objects (a
// purge killed after its deletes, a table removed by hand): the marker's
// purge deletes them too.
func TestPurgeOrphanMarkerDeletesCommitRows(t *testing.T) {
	ctx := context.Background()
	s, ddb := ddbRoot(t)
	c := &clock{}
	ns := newNS(t, s, c)
	putRow(t, ddb, "lancedb/prod/x.lance", 1, "")
	putRow(t, ddb, "lancedb/prod/x.lance", 2, "")
	_, err := s.Put(ctx, MarkerKey("x"), EncodeMarker(c.Now(), time.Hour))
	require.NoError(t, err)
	c.Advance(time.Hour + time.Second)
	res, err := ns.Purge(ctx, "x", PurgeOptions{})
	require.NoError(t, err)
	require.Equal(t, OutcomeOrphanMarker, res.Outcome)
	require.Empty(t, ddbRows(t, ddb))
}

// beforeDelete runs fn once, before the first batch delete of keys under
// prefix reaches the store: the moment a purge has committed and read the
// rows, and a writer can still commit.
type beforeDelete struct {
	objstore.Store
	prefix string
	once   sync.Once
	fn     func()
}

func (b *beforeDelete) DeleteBatch(ctx context.Context, keys []string) error {
	if len(keys) > 0 && len(keys[0]) >= len(b.prefix) && keys[0][:len(b.prefix)] == b.prefix {
		b.once.Do(b.fn)
	}
	return b.Store.DeleteBatch(ctx, keys)
}

func (b *beforeDelete) Unwrap() objstore.Store { return b.Store }

// TestPurgeStopsAtANewerCommitRow: a row of a version newer than any the
// purge read before committing is a writer that committed after the drop:
// the purge stops stuck, with every row and the marker kept.
func TestPurgeStopsAtANewerCommitRow(t *testing.T) {
	ctx := context.Background()
	s, ddb := ddbRoot(t)
	c := &clock{}
	lanceTable(t, s, "x", 2)
	for v := uint64(1); v <= 3; v++ {
		putRow(t, ddb, "lancedb/prod/x.lance", v, "")
	}
	hooked := &beforeDelete{Store: s, prefix: TableDir("x"), fn: func() { putRow(t, ddb, "lancedb/prod/x.lance", 4, "") }}
	ns := newNS(t, hooked, c)
	_, err := ns.Drop(ctx, "x", time.Hour)
	require.NoError(t, err)
	c.Advance(time.Hour + time.Second)

	_, err = ns.Purge(ctx, "x", PurgeOptions{})
	require.ErrorIs(t, err, ErrStuck)
	require.ErrorContains(t, err, "commit row of version 4 of lancedb/prod/x.lance is newer than any the purge saw")
	require.Equal(t, map[string]int{"lancedb/prod/x.lance": 4}, ddbRows(t, ddb), "no row deleted")
	_, err = s.Head(ctx, MarkerKey("x"))
	require.NoError(t, err, "the marker stays")
}

// TestPurgeRefusesARowOutsideTheTable: a row filed under the table's
// base_uri whose manifest is elsewhere is not the table's: nothing of the
// rows is deleted, the marker stays.
func TestPurgeRefusesARowOutsideTheTable(t *testing.T) {
	ctx := context.Background()
	s, ddb := ddbRoot(t)
	c := &clock{}
	ns := newNS(t, s, c)
	lanceTable(t, s, "x", 1)
	putRow(t, ddb, "lancedb/prod/x.lance", 1, "")
	putRow(t, ddb, "lancedb/prod/x.lance", 2, "lancedb/prod/x.lance2/_versions/1.manifest")
	_, err := ns.Drop(ctx, "x", time.Hour)
	require.NoError(t, err)
	c.Advance(time.Hour + time.Second)

	_, err = ns.Purge(ctx, "x", PurgeOptions{})
	require.ErrorIs(t, err, ErrStuck)
	require.ErrorContains(t, err, `names "lancedb/prod/x.lance2/_versions/1.manifest", outside the table`)
	require.Equal(t, map[string]int{"lancedb/prod/x.lance": 2}, ddbRows(t, ddb))
	_, err = s.Head(ctx, MarkerKey("x"))
	require.NoError(t, err, "the marker stays")
}

// TestRetainDeletesRowsOfRemovedVersions: retention deletes the rows of the
// versions it removed, after their manifests, and keeps the rows of every
// version left, the newest included; other tables' rows are untouched.
func TestRetainDeletesRowsOfRemovedVersions(t *testing.T) {
	ctx := context.Background()
	s, ddb := ddbRoot(t)
	ns := newNS(t, s, &clock{})
	putLanceFixture(t, s, "t")
	for v := uint64(1); v <= 6; v++ {
		putRow(t, ddb, "lancedb/prod/t.lance", v, "")
		putRow(t, ddb, "lancedb/prod/t2.lance", v, "")
	}
	p := fixturePolicy(t, s, "t")
	res, err := ns.Retain(ctx, "t", RetainOptions{Policy: p})
	require.NoError(t, err)
	require.Equal(t, RetainCleaned, res.Outcome)
	require.NotEmpty(t, res.Plan.Removed)

	tb := requireReadable(t, s, "t")
	left := map[uint64]bool{}
	for _, row := range commitRows(t, s, "t.lance") {
		left[row] = true
	}
	for _, v := range res.Plan.Removed {
		require.False(t, left[v], "row of removed version %d", v)
	}
	for _, v := range versionNumbers(tb) {
		require.True(t, left[v], "row of version %d, still listed", v)
	}
	require.True(t, left[tb.Latest().Number], "the newest row stays")
	require.Len(t, left, 6-len(res.Plan.Removed))
	require.Equal(t, 6, ddbRows(t, ddb)["lancedb/prod/t2.lance"])
}

// commitRows lists the versions of the table's rows through the store.
func commitRows(t *testing.T, s objstore.Store, table string) []uint64 {
	t.Helper()
	var out []uint64
	require.NoError(t, objstore.CommitRowsOf(s).TableRows(context.Background(), table, func(p []objstore.CommitRow) error {
		for _, r := range p {
			out = append(out, r.Version)
		}
		return nil
	}))
	return out
}

// TestRetainSweepsRowsLeftByLanceCleanup: Lance's own cleanup deletes
// manifests and leaves their rows (lance #3494); a retention run that
// removes versions also deletes the rows of versions below the newest that
// no manifest lists, and leaves a row above the newest (a writer's commit
// in flight) and a row naming a manifest outside the table.
func TestRetainSweepsRowsLeftByLanceCleanup(t *testing.T) {
	ctx := context.Background()
	s, ddb := ddbRoot(t)
	ns := newNS(t, s, &clock{})
	putLanceFixture(t, s, "t")
	p := fixturePolicy(t, s, "t") // removes 1, 3 and 4 (2 is tagged)
	const base = "lancedb/prod/t.lance"
	for v := uint64(1); v <= 6; v++ {
		path := ""
		if v == 4 {
			path = "lancedb/prod/t.lance2/_versions/4.manifest"
		}
		putRow(t, ddb, base, v, path)
	}
	putRow(t, ddb, base, 9, base+"/_versions/9.manifest-staging") // in flight
	// Lance's cleanup removed versions 1 and 4 before reaper came.
	for _, v := range []uint64{1, 4} {
		require.NoError(t, s.Delete(ctx, TableDir("t")+lance.VersionsDir+lance.ManifestName(lance.SchemeV2, v)))
	}
	res, err := ns.Retain(ctx, "t", RetainOptions{Policy: p})
	require.NoError(t, err)
	require.Equal(t, []uint64{3}, res.Plan.Removed)
	require.Equal(t, []uint64{2, 4, 5, 6, 9}, commitRows(t, s, "t.lance"),
		"row 3 removed with its version, row 1 swept; row 4 names another table, row 9 is in flight")
}

// A run that takes over the record of a run cut short after its manifests,
// with a policy that removes no version, still sweeps the rows of the
// versions the killed run removed: they would stay in the commit table for
// good (both the record found with nothing else to do and the record with
// files still true).
func TestRetainTakingOverARecordSweepsItsRows(t *testing.T) {
	ctx := context.Background()
	s, ddb := ddbRoot(t)
	c := &clock{}
	putLanceFixture(t, s, "t")
	const base = "lancedb/prod/t.lance"
	for v := uint64(1); v <= 6; v++ {
		putRow(t, ddb, base, v, "")
	}
	p := fixturePolicy(t, s, "t") // removes 1, 3 and 4
	killRetain(t, s, c, p, 2)     // the manifests of 1 and 3 went, their rows stay
	require.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, commitRows(t, s, "t.lance"))
	keep := p
	keep.KeepVersions = 5
	res, err := newNS(t, s, c).Retain(ctx, "t", RetainOptions{Policy: keep})
	require.NoError(t, err)
	require.True(t, res.Finished)
	require.Zero(t, res.VersionsRemoved)
	require.Equal(t, []uint64{2, 4, 5, 6}, commitRows(t, s, "t.lance"), "the rows of the versions the killed run removed are swept")
}
