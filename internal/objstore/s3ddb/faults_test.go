package s3ddb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb"
)

// halfProcessed sends only the first half of each of its first n batches to
// the real server and answers the rest as UnprocessedItems, as DynamoDB
// does under load.
type halfProcessed struct {
	s3ddb.API
	n, sends int
}

func (h *halfProcessed) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	h.sends++
	if h.sends > h.n {
		return h.API.BatchWriteItem(ctx, in, opts...)
	}
	out := &dynamodb.BatchWriteItemOutput{UnprocessedItems: map[string][]types.WriteRequest{}}
	sent := &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{}}
	for table, reqs := range in.RequestItems {
		half := len(reqs) / 2
		sent.RequestItems[table] = reqs[:half]
		out.UnprocessedItems[table] = reqs[half:]
	}
	if _, err := h.API.BatchWriteItem(ctx, sent, opts...); err != nil {
		return nil, err
	}
	return out, nil
}

// TestDeleteRowsResendsUnprocessed: rows DynamoDB leaves unprocessed are
// sent again until none is left.
func TestDeleteRowsResendsUnprocessed(t *testing.T) {
	root := objstoretest.S3DDBStore.NewRoot(t)
	st := root.Open(t).(*s3ddb.Store)
	for v := uint64(1); v <= 30; v++ {
		putRow(t, root.DDB, "lancedb/prod/t.lance", v)
	}
	h := &halfProcessed{n: 3}
	s3ddb.WrapClient(st, func(c s3ddb.API) s3ddb.API { h.API = c; return h })
	versions := make([]uint64, 30)
	for i := range versions {
		versions[i] = uint64(i + 1)
	}
	require.NoError(t, st.DeleteRows(t.Context(), "t.lance", versions))
	require.Greater(t, h.sends, 3, "the unprocessed rows were sent again")
	require.Empty(t, rowsOf(t, root.DDB))
}

func TestIsTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException"}, true},
		{&smithy.GenericAPIError{Code: "ThrottlingException"}, true},
		{&smithy.GenericAPIError{Code: "RequestLimitExceeded"}, true},
		{&smithy.GenericAPIError{Code: "InternalServerError"}, true},
		{&types.ResourceNotFoundException{}, false},
		{&smithy.GenericAPIError{Code: "ValidationException"}, false},
		{&smithy.GenericAPIError{Code: "AccessDeniedException"}, false},
		{objstore.ErrRequestDeadline, true},
		{objstore.ErrFenced, false},
		{context.Canceled, false},
		{errors.New("other"), false},
	} {
		require.Equal(t, tc.want, s3ddb.IsTransient(tc.err), "%v", tc.err)
	}
}
