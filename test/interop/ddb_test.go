package interop

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// ddbBackend is an s3+ddb:// root: the objects under a prefix of a fresh
// versitygw bucket, the commit rows in a fresh table of dynalite, where the
// real LanceDB client commits them.
type ddbBackend struct {
	*s3Backend
	ddb objstoretest.DDBServer
}

func newDDB(t *testing.T) *ddbBackend {
	return &ddbBackend{s3Backend: newS3(t), ddb: objstoretest.DDB(t)}
}

func (b *ddbBackend) uri() string {
	return objstoretest.S3DDBURI(b.srv, b.ddb, b.prefix)
}

// lanceOptions are the S3 options and dynamodb_endpoint, the storage option
// Lance reads its DynamoDB endpoint from.
func (b *ddbBackend) lanceOptions() map[string]string {
	o := b.srv.Options()
	o["dynamodb_endpoint"] = b.ddb.Endpoint
	return o
}

func (b *ddbBackend) cliArgs() []string {
	var out []string
	for k, v := range b.lanceOptions() {
		out = append(out, "--storage-option", k+"="+v)
	}
	return out
}

// rows reads every row of the commit table: base_uri → version → path.
func (b *ddbBackend) rows(t *testing.T) map[string]map[uint64]string {
	t.Helper()
	out := map[string]map[uint64]string{}
	in := &dynamodb.ScanInput{TableName: aws.String(b.ddb.Table), ConsistentRead: aws.Bool(true)}
	for {
		page, err := b.ddb.Client.Scan(ctxT(t), in)
		require.NoError(t, err)
		for _, item := range page.Items {
			base := item["base_uri"].(*types.AttributeValueMemberS).Value
			v, err := strconv.ParseUint(item["version"].(*types.AttributeValueMemberN).Value, 10, 64)
			require.NoError(t, err)
			if out[base] == nil {
				out[base] = map[uint64]string{}
			}
			out[base][v] = item["path"].(*types.AttributeValueMemberS).Value
		}
		if len(page.LastEvaluatedKey) == 0 {
			return out
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

func versionsOf(rows map[uint64]string) []uint64 {
	var out []uint64
	for v := range rows {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// TestS3DDB runs the real LanceDB client (npm) committing through DynamoDB
// (dynalite) against reaper on the same s3+ddb:// root: the base_uri reaper
// computes is the one LanceDB writes; a purge after reaper's soft drop
// deletes the table's rows and only its own (tables x and x2, names that
// are prefixes of each other), so LanceDB re-creates it at version 1;
// retention deletes the rows of the versions it removed and keeps the
// newest, and LanceDB commits on after it.
func TestS3DDB(t *testing.T) {
	node := requireNode(t)
	bin := reaperBin(t)
	b := newDDB(t)
	db := newLanceDB(t, node, b.uri(), b.lanceOptions())
	c := cli{bin: bin, b: b}

	db.run(t,
		opCreate("x", "plain", 0, 10), opAdd("x", 10, 20), opAdd("x", 20, 30), opAdd("x", 30, 40),
		opCreate("x2", "plain", 0, 5), opAdd("x2", 5, 10), opAdd("x2", 10, 15),
	)

	// The rows LanceDB wrote are filed under the base_uri reaper computes,
	// and name manifests under it.
	st, err := all.Open(context.Background(), b.uri(), b.lanceOptions())
	require.NoError(t, err)
	rows := objstore.CommitRowsOf(st)
	require.NotNil(t, rows)
	written := b.rows(t)
	for name, want := range map[string][]uint64{"x": {1, 2, 3, 4}, "x2": {1, 2, 3}} {
		key := rows.TableKey(name + ".lance")
		require.Equal(t, "lancedb/"+name+".lance", key)
		require.Equal(t, want, versionsOf(written[key]), "LanceDB's rows of %s", name)
		for v, p := range written[key] {
			require.True(t, strings.HasPrefix(p, key+"/_versions/"), "row %d of %s names %s", v, key, p)
		}
		var read []uint64
		require.NoError(t, rows.TableRows(context.Background(), name+".lance", func(page []objstore.CommitRow) error {
			for _, r := range page {
				require.Equal(t, written[key][r.Version], r.Path)
				read = append(read, r.Version)
			}
			return nil
		}))
		require.Equal(t, want, read, "reaper reads LanceDB's rows of %s", name)
	}
	require.Len(t, written, 2, "LanceDB wrote rows under two base_uris: %v", written)

	// Soft drop, then purge once the TTL has passed.
	out, code := c.run(t, "drop", "--ttl", "1s", "x")
	require.Equal(t, 0, code, "reaper drop: %s", out)
	marker := b.list(t, "x.deleted")["x.deleted"]
	require.False(t, marker.Modified.IsZero(), "no x.deleted")
	waitSecondAfter(t, marker.Modified.Add(time.Second))
	// The CLI reads the store's clock, a lower bound of it (whole seconds).
	require.Eventually(t, func() bool { return c.status(t, "x")["x"].Due }, 10*time.Second, 100*time.Millisecond, "x due")
	p, code := c.purge(t, "x")
	require.Equal(t, 0, code)
	require.Len(t, p.Purged, 1)
	require.Empty(t, p.Failed)
	require.Empty(t, b.list(t, "x.lance/"))
	require.Nil(t, b.get(t, "x.deleted"))
	after := b.rows(t)
	require.NotContains(t, after, "lancedb/x.lance", "the purged table's rows are gone")
	require.Equal(t, written["lancedb/x2.lance"], after["lancedb/x2.lance"], "x2's rows are untouched")

	// LanceDB re-creates the purged table from scratch.
	res := db.run(t, opCreate("x", "plain", 100, 110), opSnapshot("x"), opNames())
	snap := decode[snapshot](t, res[1])
	require.EqualValues(t, 1, snap.Version, "a re-created table starts at version 1")
	require.EqualValues(t, 10, snap.Rows)
	require.Equal(t, []uint64{1}, versionsOf(b.rows(t)["lancedb/x.lance"]))

	// Retention of x2: the rows of the versions it removes go, the newest
	// stays, and LanceDB commits the next version on top.
	cutoff := b.storeNow(t).Add(time.Second)
	waitSecondAfter(t, cutoff)
	out, code = c.run(t, "retain", "--before", cutoff.UTC().Format(time.RFC3339), "--allow-short-ttl", "-o", "json", "x2")
	require.Equal(t, 0, code, "reaper retain: %s", out)
	var r struct {
		Tables []struct {
			Name            string `json:"name"`
			Result          string `json:"result"`
			VersionsDeleted int    `json:"versions_deleted"`
		} `json:"tables"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Len(t, r.Tables, 1)
	require.Equal(t, "cleaned", r.Tables[0].Result, out)
	require.Equal(t, 2, r.Tables[0].VersionsDeleted, out)
	require.Equal(t, []uint64{3}, versionsOf(b.rows(t)["lancedb/x2.lance"]), "only the newest row of x2 stays")
	res = db.run(t, opAdd("x2", 15, 20), opSnapshot("x2"))
	snap = decode[snapshot](t, res[1])
	require.EqualValues(t, 4, snap.Version)
	require.EqualValues(t, 20, snap.Rows)
	require.Equal(t, []uint64{3, 4}, versionsOf(b.rows(t)["lancedb/x2.lance"]))
}
