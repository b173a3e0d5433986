package s3

import (
	"context"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// DefaultRegion is used when neither the storage options nor the AWS default
// chain name a region; S3-compatible servers mostly ignore it.
const DefaultRegion = "us-east-1"

// Option adjusts how Open builds the client.
type Option func(*openConfig)

type openConfig struct {
	httpClient *http.Client
}

// WithHTTPClient sends every request through c, so callers can count
// requests or inject faults in c.Transport.
func WithHTTPClient(c *http.Client) Option {
	return func(oc *openConfig) { oc.httpClient = c }
}

// WithTransport is WithHTTPClient with a client around rt.
func WithTransport(rt http.RoundTripper) Option {
	return WithHTTPClient(&http.Client{Transport: rt})
}

// Open returns a store over an s3 location. Storage options (see
// ParseOptions) override the AWS SDK default chain: environment, shared
// config and profile, web identity. The region falls back to DefaultRegion,
// and buckets are addressed path-style unless
// aws_virtual_hosted_style_request=true. The SDK's own retries are off: a
// retried conditional write can land twice-seen as a precondition failure,
// so retrying belongs in a wrapper that knows the operation (IsTransient).
func Open(ctx context.Context, loc objstore.Location, options map[string]string, opts ...Option) (*Store, error) {
	if loc.Scheme != objstore.SchemeS3 {
		return nil, fmt.Errorf("open s3 store: %s is not an s3:// root", loc)
	}
	o, err := ParseOptions(options)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	var oc openConfig
	for _, opt := range opts {
		opt(&oc)
	}
	client, err := NewClient(ctx, o, oc.httpClient)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	return New(client, loc), nil
}

// NewClient builds an SDK client from parsed options; httpClient may be nil
// (the SDK's default client).
func NewClient(ctx context.Context, o Options, httpClient *http.Client) (*s3.Client, error) {
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithLogger(sdkLogger{}),
	}
	if o.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.Region))
	}
	if o.AccessKeyID != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.AccessKeyID, o.SecretAccessKey, o.SessionToken)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = !o.VirtualHostedStyle
		if httpClient != nil {
			// Set here, not in LoadDefaultConfig, which rejects a plain
			// *http.Client when AWS_CA_BUNDLE is set; the caller's
			// transport then owns TLS roots.
			so.HTTPClient = httpClient
		}
	}), nil
}
