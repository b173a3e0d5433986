package gcs

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/api/option"
	storage "google.golang.org/api/storage/v1"
	htransport "google.golang.org/api/transport/http"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/gcs/gcsopt"
)

// Open returns a store over a gs location. Storage options (see
// gcsopt.Parse) pick the credentials; without them the client uses
// Application Default Credentials. The client's own retries are off: a
// retried conditional write may have landed, so retrying belongs in a
// wrapper that knows the operation (IsTransient). env's transport carries
// every request, below authentication.
func Open(ctx context.Context, loc objstore.Location, options map[string]string, env objstore.OpenEnv) (*Store, error) {
	if loc.Scheme != Scheme {
		return nil, fmt.Errorf("open gcs store: %s is not a gs:// root", loc)
	}
	o, err := gcsopt.Parse(options)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	st := newStore(loc)
	client, err := newClient(ctx, o, st.clock.RoundTripper(env.Transport))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", loc, err)
	}
	st.client = client
	return st, nil
}

// newClient builds the JSON API client over base (the transport that
// records the store's clock), with authentication on top unless the key
// disables it. It is the generated client of the JSON API alone, not
// cloud.google.com/go/storage: the store sends five kinds of request, and
// that library's gRPC, DirectPath and telemetry machinery doubled reaper's
// dependency tree (and its build time) for none of them. Every call goes
// through the JSON API, so every answer maps to errors the same way, and
// nothing retries on its own (no call sets WithRetry).
func newClient(ctx context.Context, o gcsopt.Options, base http.RoundTripper) (*storage.Service, error) {
	rt := base
	if !o.DisableOAuth {
		var err error
		if rt, err = htransport.NewTransport(ctx, base, credentialOptions(o)...); err != nil {
			return nil, fmt.Errorf("google credentials: %w", err)
		}
	}
	copts := []option.ClientOption{
		option.WithHTTPClient(&http.Client{Transport: rt}),
		option.WithTelemetryDisabled(),
	}
	if o.Endpoint != "" {
		copts = append(copts, option.WithEndpoint(strings.TrimSuffix(o.Endpoint, "/")+"/storage/v1/"))
	}
	client, err := storage.NewService(ctx, copts...)
	if err != nil {
		return nil, fmt.Errorf("storage client: %w", err)
	}
	return client, nil
}

// credentialOptions maps the credential storage options to the auth
// library's; none means Application Default Credentials.
func credentialOptions(o gcsopt.Options) []option.ClientOption {
	opts := []option.ClientOption{option.WithScopes(storage.DevstorageReadWriteScope)}
	switch {
	case o.ServiceAccountKey != "":
		opts = append(opts, option.WithAuthCredentialsJSON(option.ServiceAccount, []byte(o.ServiceAccountKey)))
	case o.ServiceAccountPath != "":
		opts = append(opts, option.WithAuthCredentialsFile(option.ServiceAccount, o.ServiceAccountPath))
	case o.ApplicationCredentialsPath != "":
		// An ADC file may hold a service account or a user's credentials;
		// the library reads its type.
		opts = append(opts, option.WithCredentialsFile(o.ApplicationCredentialsPath)) //nolint:staticcheck // the file's type is not known ahead
	}
	return opts
}
