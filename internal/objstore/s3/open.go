package s3

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3/s3opt"
)

// DefaultRegion is used when neither the storage options nor the AWS default
// chain name a region; S3-compatible servers mostly ignore it.
const DefaultRegion = "us-east-1"

// Open returns a store over an s3 location. Storage options (see
// s3opt.Parse) override the AWS SDK default chain: environment, shared
// config and profile, web identity. The region falls back to DefaultRegion,
// and buckets are addressed path-style unless
// aws_virtual_hosted_style_request=true. The SDK's own retries are off: a
// retried conditional write can land twice-seen as a precondition failure,
// so retrying belongs in a wrapper that knows the operation (IsTransient).
// env's transport carries every request; its logger receives, at debug
// level, the resolved region and endpoint and the SDK's own log lines
// (which otherwise go to stderr unasked, such as "WARN falling back to
// IMDSv1").
func Open(ctx context.Context, loc objstore.Location, options map[string]string, env objstore.OpenEnv) (*Store, error) {
	if loc.Scheme != Scheme {
		return nil, fmt.Errorf("open s3 store: %s is not an s3:// root", loc)
	}
	o, err := s3opt.Parse(options)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	log := env.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var httpClient *http.Client
	if env.Transport != nil {
		httpClient = &http.Client{Transport: env.Transport}
	}
	client, regionFrom, err := newClient(ctx, o, httpClient, log)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	if err := checkEnvEndpoint(client, o); err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	endpoint := o.Endpoint
	if endpoint == "" {
		endpoint = "the AWS default for the region"
		if client.Options().BaseEndpoint != nil {
			endpoint = *client.Options().BaseEndpoint
		}
	}
	log.Debug("s3 client", "root", loc.String(), "region", client.Options().Region, "region_from", regionFrom,
		"endpoint", endpoint, "path_style", !o.VirtualHostedStyle)
	return New(client, loc), nil
}

// checkEnvEndpoint holds an endpoint the SDK took from the environment
// (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, a profile's endpoint_url) to the
// rule aws_endpoint follows (s3opt): plain http only with allow_http=true,
// as Lance requires, so credentials never cross the network in the clear
// because a variable was set.
func checkEnvEndpoint(client *s3.Client, o s3opt.Options) error {
	base := client.Options().BaseEndpoint
	if o.Endpoint != "" || o.AllowHTTP || base == nil {
		return nil
	}
	u, err := url.Parse(*base)
	if err != nil || !strings.EqualFold(u.Scheme, "http") {
		return nil
	}
	from := "the AWS profile's endpoint_url"
	for _, v := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if os.Getenv(v) != "" {
			from = v
			break
		}
	}
	return fmt.Errorf("the endpoint %s (from %s) is plain http: pass the storage option %s=true to allow it", *base, from, s3opt.AllowHTTP)
}

// NewClient builds an SDK client from parsed options; httpClient may be nil
// (the SDK's default client).
func NewClient(ctx context.Context, o s3opt.Options, httpClient *http.Client) (*s3.Client, error) {
	c, _, err := newClient(ctx, o, httpClient, slog.New(slog.DiscardHandler))
	return c, err
}

// newClient is NewClient that also says where the region came from, and
// sends the SDK's log lines to log at debug level.
func newClient(ctx context.Context, o s3opt.Options, httpClient *http.Client, log *slog.Logger) (*s3.Client, string, error) {
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithLogger(SDKLogger{Log: log}),
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
		return nil, "", fmt.Errorf("load aws config: %w", err)
	}
	regionFrom := "storage option aws_region"
	switch {
	case o.Region != "":
	case cfg.Region != "":
		regionFrom = "AWS SDK chain (AWS_REGION, AWS_DEFAULT_REGION or the profile)"
	default:
		cfg.Region = DefaultRegion
		regionFrom = "default (set aws_region or AWS_REGION)"
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
	}), regionFrom, nil
}

// SDKLogger sends the AWS SDK's own log lines (IMDS fallbacks, "Response
// has no supported checksum") to slog at debug level, as structured lines
// of the process's log stream: reaper reports what a user must act on
// itself, in one line naming the root (misconfig.go), so an SDK warning on
// stderr before it would only confuse. Every AWS client reaper builds (S3,
// and s3+ddb's DynamoDB) logs through it. A nil Log means slog.Default().
type SDKLogger struct{ Log *slog.Logger }

func (l SDKLogger) Logf(c logging.Classification, format string, v ...any) {
	log := l.Log
	if log == nil {
		log = slog.Default()
	}
	log.Debug("aws sdk: "+fmt.Sprintf(format, v...), "component", "aws-sdk", "classification", string(c))
}
