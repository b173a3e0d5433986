package s3ddb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb/ddburi"
)

// This file owns the rows: how a table's rows are read and deleted in
// Lance's DynamoDB commit table (rust/lance-table/src/io/commit/dynamodb.rs:
// partition key base_uri (S), sort key version (N), attributes path,
// committer and size).

// Attribute names of Lance's rows. "path" is a DynamoDB reserved word, so
// expressions name them through placeholders.
const (
	attrBaseURI = "base_uri"
	attrVersion = "version"
	attrPath    = "path"
)

// maxWriteBatch is BatchWriteItem's limit of requests per call.
const maxWriteBatch = 25

// Request retries: DynamoDB answers throttling and internal errors that a
// later attempt gets through; each attempt asks the fence again.
const (
	maxAttempts  = 8
	firstBackoff = 50 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

// API is the part of *dynamodb.Client the rows use.
type API interface {
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
}

type rows struct {
	client API
	table  string // the DynamoDB table
	prefix string // the root's key prefix in its bucket
	// pageLimit is the Limit of each Query (0: DynamoDB's 1 MB pages);
	// tests lower it to exercise paging.
	pageLimit int32
}

// TableKey is the base_uri Lance files table's rows under.
func (s *Store) TableKey(table string) string {
	k, err := ddburi.BaseURI(s.rows.prefix, table)
	if err != nil {
		return table
	}
	return k
}

// TableRows reads the table's rows page by page, consistently, in version
// order.
func (s *Store) TableRows(ctx context.Context, table string, fn func([]objstore.CommitRow) error) error {
	return s.rows.each(ctx, table, fn)
}

// DeleteRows deletes the table's rows of versions, 25 to a request,
// resending what DynamoDB leaves unprocessed.
func (s *Store) DeleteRows(ctx context.Context, table string, versions []uint64) error {
	return s.rows.delete(ctx, table, versions)
}

func (r *rows) each(ctx context.Context, table string, fn func([]objstore.CommitRow) error) error {
	base, err := ddburi.BaseURI(r.prefix, table)
	if err != nil {
		return fmt.Errorf("read commit rows of %q: %w", table, err)
	}
	in := &dynamodb.QueryInput{
		TableName:                aws.String(r.table),
		ConsistentRead:           aws.Bool(true),
		KeyConditionExpression:   aws.String("#b = :b"),
		ProjectionExpression:     aws.String("#v, #p"),
		ExpressionAttributeNames: map[string]string{"#b": attrBaseURI, "#v": attrVersion, "#p": attrPath},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":b": &types.AttributeValueMemberS{Value: base},
		},
	}
	if r.pageLimit > 0 {
		in.Limit = aws.Int32(r.pageLimit)
	}
	for {
		var out *dynamodb.QueryOutput
		err := retrying(ctx, false, func(ctx context.Context) error {
			var err error
			out, err = r.client.Query(ctx, in)
			return err
		})
		if err != nil {
			return fmt.Errorf("read commit rows of %s in DynamoDB table %s: %w", base, r.table, explain(err, r.table))
		}
		page := make([]objstore.CommitRow, 0, len(out.Items))
		for _, item := range out.Items {
			row, err := parseRow(item)
			if err != nil {
				return fmt.Errorf("read commit rows of %s in DynamoDB table %s: %w", base, r.table, err)
			}
			page = append(page, row)
		}
		if len(page) > 0 {
			if err := fn(page); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// parseRow reads a row's version and path; a row without them, or with a
// version that is no table version, is an error: a purge that cannot read
// a row does not delete it.
func parseRow(item map[string]types.AttributeValue) (objstore.CommitRow, error) {
	v, ok := item[attrVersion].(*types.AttributeValueMemberN)
	if !ok {
		return objstore.CommitRow{}, errors.New("a row has no numeric version")
	}
	version, err := strconv.ParseUint(v.Value, 10, 64)
	if err != nil {
		return objstore.CommitRow{}, fmt.Errorf("a row's version %q is not a table version", v.Value)
	}
	row := objstore.CommitRow{Version: version}
	if p, ok := item[attrPath].(*types.AttributeValueMemberS); ok {
		row.Path = p.Value
	}
	return row, nil
}

func (r *rows) delete(ctx context.Context, table string, versions []uint64) error {
	base, err := ddburi.BaseURI(r.prefix, table)
	if err != nil {
		return fmt.Errorf("delete commit rows of %q: %w", table, err)
	}
	for len(versions) > 0 {
		n := min(len(versions), maxWriteBatch)
		reqs := make([]types.WriteRequest, n)
		for i, v := range versions[:n] {
			reqs[i] = types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{
				attrBaseURI: &types.AttributeValueMemberS{Value: base},
				attrVersion: &types.AttributeValueMemberN{Value: strconv.FormatUint(v, 10)},
			}}}
		}
		if err := r.write(ctx, reqs); err != nil {
			return fmt.Errorf("delete commit rows of %s in DynamoDB table %s: %w", base, r.table, explain(err, r.table))
		}
		versions = versions[n:]
	}
	return nil
}

// write sends one batch of deletes, and again what DynamoDB leaves
// unprocessed (it does under load), backing off between sends.
func (r *rows) write(ctx context.Context, reqs []types.WriteRequest) error {
	backoff := firstBackoff
	for attempt := 1; len(reqs) > 0; attempt++ {
		var out *dynamodb.BatchWriteItemOutput
		err := retrying(ctx, true, func(ctx context.Context) error {
			var err error
			out, err = r.client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]types.WriteRequest{r.table: reqs},
			})
			return err
		})
		if err != nil {
			return err
		}
		reqs = out.UnprocessedItems[r.table]
		if len(reqs) == 0 {
			return nil
		}
		if attempt == maxAttempts {
			return fmt.Errorf("%d row(s) still unprocessed after %d sends", len(reqs), attempt)
		}
		if err := wait(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, maxBackoff)
	}
	return nil
}

// retrying sends one request, again while its error is transient, up to
// maxAttempts; a mutating one asks ctx's fence before every attempt.
func retrying(ctx context.Context, mutating bool, send func(context.Context) error) error {
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		var err error
		if mutating {
			err = objstore.Fenced(ctx, send)
		} else {
			err = send(ctx)
		}
		if err == nil || attempt == maxAttempts || !IsTransient(err) || ctx.Err() != nil {
			return err
		}
		if err := wait(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// IsTransient reports whether a DynamoDB error is worth another attempt:
// throttling, DynamoDB's internal errors, a request never sent or cut by
// the fence's deadline.
func IsTransient(err error) bool {
	return objstore.ClassifyTransient(err, func(err error) (bool, bool) {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			switch ae.ErrorCode() {
			case "ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded",
				"InternalServerError", "ServiceUnavailable", "LimitExceededException":
				return true, true
			}
		}
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) {
			switch re.HTTPStatusCode() {
			case 500, 502, 503, 504:
				return true, true
			}
		}
		var sendErr *smithyhttp.RequestSendError
		if errors.As(err, &sendErr) {
			return true, true
		}
		return false, false
	})
}

// explain says what to fix when the commit table is not where the root
// names it: a wrong ?ddbTableName, region or dynamodb_endpoint.
func explain(err error, table string) error {
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return fmt.Errorf("the DynamoDB table %s does not exist there: check the root's ?%s=, aws_region and %s (%w)", table, ddburi.TableQuery, ddburi.Endpoint, err)
	}
	return err
}
