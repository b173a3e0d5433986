// Command floor is the raw floor of an S3 purge, the reference `make bench`
// holds reaper to: list every key under a prefix, then DeleteObjects in
// batches with a fixed number of requests in flight. No lease, no marker, no
// fence, no verify: whatever reaper spends beyond this is the price of its
// safety protocol.
//
//	AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… floor --endpoint http://127.0.0.1:7070 --bucket b --prefix db/t0.lance/
//
// It prints one JSON line, {"objects":N}, and exits non-zero if any request
// or any key of a batch fails.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// options are the command's flags.
type options struct {
	Endpoint, Bucket, Prefix, Region string
	Concurrency, Batch               int
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.Endpoint, "endpoint", "", "S3 endpoint URL (path-style addressing)")
	fs.StringVar(&o.Bucket, "bucket", "", "bucket")
	fs.StringVar(&o.Prefix, "prefix", "", "delete every key under this prefix")
	fs.StringVar(&o.Region, "region", "us-east-1", "region for request signing")
	fs.IntVar(&o.Concurrency, "concurrency", 16, "DeleteObjects requests in flight")
	fs.IntVar(&o.Batch, "batch", 1000, "keys per DeleteObjects request (S3 allows at most 1000)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.Endpoint == "" || o.Bucket == "":
		return o, errors.New("--endpoint and --bucket are required")
	case o.Concurrency < 1:
		return o, fmt.Errorf("--concurrency %d: want at least 1", o.Concurrency)
	case o.Batch < 1 || o.Batch > 1000:
		return o, fmt.Errorf("--batch %d: want 1 to 1000", o.Batch)
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := purge(ctx, newClient(o), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(struct {
		Objects int `json:"objects"`
	}{n})
}

// newClient is a path-style client with the SDK's standard retryer (left
// on: the floor should not fail where reaper's retries would carry on) and
// an idle pool as wide as the requests in flight, so batches reuse
// connections instead of dialling.
func newClient(o options) *s3.Client {
	hc := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		t.MaxIdleConnsPerHost = max(t.MaxIdleConnsPerHost, o.Concurrency)
	})
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(o.Endpoint),
		Region:       o.Region,
		UsePathStyle: true,
		HTTPClient:   hc,
		Credentials: credentials.NewStaticCredentialsProvider(
			os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")),
	})
}

// purge lists the prefix whole, then deletes it batch by batch, and returns
// how many keys it deleted.
func purge(ctx context.Context, c *s3.Client, o options) (int, error) {
	keys, err := list(ctx, c, o)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []string)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if err := deleteBatch(ctx, c, o.Bucket, b); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	for start := 0; start < len(keys) && ctx.Err() == nil; start += o.Batch {
		batches <- keys[start:min(start+o.Batch, len(keys))]
	}
	close(batches)
	wg.Wait()
	if first != nil {
		return 0, first
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return len(keys), nil
}

// list returns every key under the prefix, 1,000 a page.
func list(ctx context.Context, c *s3.Client, o options) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{
		Bucket: aws.String(o.Bucket), Prefix: aws.String(o.Prefix), MaxKeys: aws.Int32(1000),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", o.Bucket, o.Prefix, err)
		}
		for _, obj := range page.Contents {
			keys = append(keys, aws.ToString(obj.Key))
		}
	}
	return keys, nil
}

// deleteBatch deletes keys in one quiet DeleteObjects request; a key the
// server reports as not deleted fails the batch.
func deleteBatch(ctx context.Context, c *s3.Client, bucket string, keys []string) error {
	ids := make([]types.ObjectIdentifier, len(keys))
	for i, k := range keys {
		ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
	}
	out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{
		Bucket: aws.String(bucket),
		Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("delete %d keys from %s: %w", len(keys), keys[0], err)
	}
	if len(out.Errors) > 0 {
		e := out.Errors[0]
		return fmt.Errorf("delete %s: %s: %s (%d of %d keys failed)",
			aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message), len(out.Errors), len(keys))
	}
	return nil
}
