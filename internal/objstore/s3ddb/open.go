package s3ddb

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb/ddburi"
)

// Store is an S3 store whose tables commit through a DynamoDB table: every
// objstore.Store call goes to S3, the rows through objstore.CommitRows.
type Store struct {
	*s3.Store
	loc  objstore.Location
	rows *rows
}

var (
	_ objstore.Store      = (*Store)(nil)
	_ objstore.CommitRows = (*Store)(nil)
)

// URI is the s3+ddb:// root URI; it never carries credentials.
func (s *Store) URI() string { return s.loc.String() }

// Open opens an s3+ddb:// root: the S3 store as s3.Open opens an s3://
// root with the same options, and a DynamoDB client with the same
// credentials chain and region, as Lance builds its own
// (commit_handler_from_url): the endpoint is the storage option
// dynamodb_endpoint, else DYNAMODB_ENDPOINT, else the SDK's (which reads
// AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL). A plain http endpoint
// needs allow_http=true, as aws_endpoint does. The SDK's retries are off:
// each DynamoDB request asks the lease's fence before it is sent, retries
// included (rows.go).
func Open(ctx context.Context, loc objstore.Location, options map[string]string, env objstore.OpenEnv) (*Store, error) {
	table := ddburi.Table(loc)
	if loc.Scheme != Scheme || table == "" {
		return nil, fmt.Errorf("open s3+ddb store: %s is not an s3+ddb:// root", loc)
	}
	o, err := ddburi.ParseOptions(options)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	endpoint, from := o.Endpoint, "storage option "+ddburi.Endpoint
	if endpoint == "" {
		if endpoint = os.Getenv(ddburi.EnvEndpoint); endpoint != "" {
			from = ddburi.EnvEndpoint
			if err := ddburi.CheckEndpoint(endpoint, from, o.S3.AllowHTTP); err != nil {
				return nil, fmt.Errorf("open %s: %w", loc, err)
			}
		}
	}
	objects, err := s3.Open(ctx, ddburi.S3(loc), s3Options(options), env)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	client, err := newClient(ctx, o, endpoint, env)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	if sdk := client.Options().BaseEndpoint; endpoint == "" && sdk != nil {
		// AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL or a profile's
		// endpoint_url: held to the same rule.
		endpoint, from = *sdk, "the AWS SDK's endpoint settings (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL, the profile)"
		if err := ddburi.CheckEndpoint(endpoint, from, o.S3.AllowHTTP); err != nil {
			return nil, fmt.Errorf("open %s: %w", loc, err)
		}
	}
	if env.Logger != nil {
		env.Logger.Debug("dynamodb client", "root", loc.String(), "table", table,
			"region", client.Options().Region, "endpoint", endpoint, "endpoint_from", from)
	}
	return &Store{Store: objects, loc: loc, rows: &rows{client: client, table: table, prefix: loc.Prefix}}, nil
}

// newClient builds the DynamoDB client: the S3 options' region and keys,
// else the AWS SDK chain; the region falls back to s3.DefaultRegion, as the
// S3 client's does.
func newClient(ctx context.Context, o ddburi.Options, endpoint string, env objstore.OpenEnv) (*dynamodb.Client, error) {
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithLogger(s3.SDKLogger{Log: env.Logger}),
	}
	if o.S3.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.S3.Region))
	}
	if o.S3.AccessKeyID != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.S3.AccessKeyID, o.S3.SecretAccessKey, o.S3.SessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = s3.DefaultRegion
	}
	return dynamodb.NewFromConfig(cfg, func(do *dynamodb.Options) {
		if endpoint != "" {
			do.BaseEndpoint = aws.String(endpoint)
		}
		if env.Transport != nil {
			do.HTTPClient = &http.Client{Transport: env.Transport}
		}
	}), nil
}
