package s3ddb_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		return objstoretest.S3DDBStore.NewRoot(t).Open(t)
	})
}

// putRow writes a row as Lance's DynamoDBExternalManifestStore writes one.
func putRow(t *testing.T, ddb *objstoretest.DDBServer, baseURI string, version uint64) {
	t.Helper()
	_, err := ddb.Client.PutItem(t.Context(), &dynamodb.PutItemInput{
		TableName: aws.String(ddb.Table),
		Item: map[string]types.AttributeValue{
			"base_uri":  &types.AttributeValueMemberS{Value: baseURI},
			"version":   &types.AttributeValueMemberN{Value: strconv.FormatUint(version, 10)},
			"path":      &types.AttributeValueMemberS{Value: fmt.Sprintf("%s/_versions/%020d.manifest", baseURI, ^uint64(0)-version)},
			"committer": &types.AttributeValueMemberS{Value: "lancedb"},
			"size":      &types.AttributeValueMemberN{Value: "512"},
		},
	})
	require.NoError(t, err)
}

// rowsOf lists every row of the commit table, by base_uri.
func rowsOf(t *testing.T, ddb *objstoretest.DDBServer) map[string][]uint64 {
	t.Helper()
	out, err := ddb.Client.Scan(t.Context(), &dynamodb.ScanInput{TableName: aws.String(ddb.Table)})
	require.NoError(t, err)
	got := map[string][]uint64{}
	for _, item := range out.Items {
		v, err := strconv.ParseUint(item["version"].(*types.AttributeValueMemberN).Value, 10, 64)
		require.NoError(t, err)
		b := item["base_uri"].(*types.AttributeValueMemberS).Value
		got[b] = append(got[b], v)
	}
	return got
}

// TestRows reads a table's rows across pages in version order and deletes
// them across batches, leaving the rows of every other base_uri alone:
// neighbours whose names share a prefix with the table's, a table nested
// under it, the root itself.
func TestRows(t *testing.T) {
	root := objstoretest.S3DDBStore.NewRoot(t)
	st := root.Open(t)
	rows := objstore.CommitRowsOf(st)
	require.NotNil(t, rows)
	require.Equal(t, "lancedb/prod/t.lance", rows.TableKey("t.lance"))
	const n = 60 // several Query pages of the test's limit, three write batches
	for v := uint64(1); v <= n; v++ {
		putRow(t, root.DDB, "lancedb/prod/t.lance", v)
	}
	neighbours := []string{"lancedb/prod/t.lanc", "lancedb/prod/tt.lance", "lancedb/prod/t.lance/x.lance", "lancedb/prod", "t.lance", "lancedb/prod/t.lance2"}
	for _, b := range neighbours {
		putRow(t, root.DDB, b, 1)
		putRow(t, root.DDB, b, 2)
	}

	s3ddb.SetPageLimit(st.(*s3ddb.Store), 7)
	var got []uint64
	pages := 0
	require.NoError(t, rows.TableRows(t.Context(), "t.lance", func(page []objstore.CommitRow) error {
		pages++
		for _, r := range page {
			require.Equal(t, fmt.Sprintf("lancedb/prod/t.lance/_versions/%020d.manifest", ^uint64(0)-r.Version), r.Path)
			got = append(got, r.Version)
		}
		return nil
	}))
	require.Greater(t, pages, 1, "the rows came in one page: paging untested")
	want := make([]uint64, n)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	require.Equal(t, want, got)

	require.NoError(t, rows.DeleteRows(t.Context(), "t.lance", want))
	left := rowsOf(t, root.DDB)
	require.NotContains(t, left, "lancedb/prod/t.lance")
	for _, b := range neighbours {
		require.ElementsMatch(t, []uint64{1, 2}, left[b], "rows of %s", b)
	}
	// Deleting rows that are gone succeeds.
	require.NoError(t, rows.DeleteRows(t.Context(), "t.lance", []uint64{1, 99}))
}

type refuse struct{}

func (refuse) Allow() (time.Duration, error) { return 0, errors.New("lease lost") }

// TestDeleteRowsAsksTheFence: a fence that refuses sends no delete.
func TestDeleteRowsAsksTheFence(t *testing.T) {
	root := objstoretest.S3DDBStore.NewRoot(t)
	rows := objstore.CommitRowsOf(root.Open(t))
	putRow(t, root.DDB, "lancedb/prod/t.lance", 1)
	err := rows.DeleteRows(objstore.WithFence(t.Context(), refuse{}), "t.lance", []uint64{1})
	require.ErrorIs(t, err, objstore.ErrFenced)
	require.Equal(t, []uint64{1}, rowsOf(t, root.DDB)["lancedb/prod/t.lance"])
}

type wrapper struct{ objstore.Store }

func (w wrapper) Unwrap() objstore.Store { return w.Store }

// TestCommitRowsOf finds the rows under wrappers, and only on s3+ddb://.
func TestCommitRowsOf(t *testing.T) {
	root := objstoretest.S3DDBStore.NewRoot(t)
	require.NotNil(t, objstore.CommitRowsOf(wrapper{wrapper{root.Open(t)}}))
	require.Nil(t, objstore.CommitRowsOf(wrapper{objstoretest.S3Store.NewRoot(t).Open(t)}))
}

// TestOpen opens through the registry with the endpoint from the storage
// option or, as Lance, from DYNAMODB_ENDPOINT, and holds both to
// allow_http.
func TestOpen(t *testing.T) {
	root := objstoretest.S3DDBStore.NewRoot(t)
	putRow(t, root.DDB, "lancedb/prod/t.lance", 3)
	count := func(st objstore.Store) int {
		n := 0
		require.NoError(t, objstore.CommitRowsOf(st).TableRows(context.Background(), "t.lance", func(p []objstore.CommitRow) error {
			n += len(p)
			return nil
		}))
		return n
	}
	st, err := all.Open(t.Context(), root.URI, root.Options)
	require.NoError(t, err)
	require.Equal(t, root.URI, st.URI())
	require.Equal(t, 1, count(st))

	noEndpoint := map[string]string{}
	for k, v := range root.Options {
		if k != "dynamodb_endpoint" {
			noEndpoint[k] = v
		}
	}
	t.Setenv("DYNAMODB_ENDPOINT", root.DDB.Endpoint)
	st, err = all.Open(t.Context(), root.URI, noEndpoint)
	require.NoError(t, err)
	require.Equal(t, 1, count(st))

	delete(noEndpoint, "allow_http")
	delete(noEndpoint, "aws_endpoint")
	_, err = all.Open(t.Context(), root.URI, noEndpoint)
	require.ErrorContains(t, err, "DYNAMODB_ENDPOINT=")
	require.ErrorContains(t, err, "allow_http=true")

	t.Setenv("DYNAMODB_ENDPOINT", "")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", root.DDB.Endpoint)
	_, err = all.Open(t.Context(), root.URI, noEndpoint)
	require.ErrorContains(t, err, "AWS_ENDPOINT_URL_DYNAMODB")
	require.ErrorContains(t, err, "allow_http=true")
}

// TestMissingCommitTable names the table and what to check.
func TestMissingCommitTable(t *testing.T) {
	srv := objstoretest.S3(t)
	ddb := objstoretest.DDB(t)
	ddb.Table = "no-such-table"
	opts := srv.Options()
	opts["dynamodb_endpoint"] = ddb.Endpoint
	st, err := all.Open(t.Context(), objstoretest.S3DDBURI(srv, ddb, "db"), opts)
	require.NoError(t, err)
	err = objstore.CommitRowsOf(st).TableRows(t.Context(), "t.lance", func([]objstore.CommitRow) error { return nil })
	require.ErrorContains(t, err, "the DynamoDB table no-such-table does not exist there: check the root's ?ddbTableName=, aws_region and dynamodb_endpoint")
}
