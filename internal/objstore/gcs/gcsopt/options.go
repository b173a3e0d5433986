// Package gcsopt reads the Google Cloud Storage backend's storage options:
// the names Lance uses, strictly, never quoting the inline key. It is apart
// from package gcs so that the parser, which takes user input and is fuzzed,
// builds without Google's API client: `go test -fuzz` instruments every
// package of the fuzzed test binary, and the client is most of package gcs's.
package gcsopt

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Storage option names, as Lance spells them: Lance hands them to the Rust
// object_store crate (GoogleConfigKey), so a LanceDB user's options work
// here unchanged. object_store has no endpoint key for Google: a custom
// endpoint (fake-gcs-server) travels in the service account key JSON as
// "gcs_base_url", with "disable_oauth": true, and so it does here.
const (
	ServiceAccount         = "google_service_account"
	ServiceAccountKey      = "google_service_account_key"
	ApplicationCredentials = "google_application_credentials"
	AllowHTTP              = "allow_http"
)

// StorageOptions is the one table of the names Parse knows, in the order
// its errors list them, the secret ones marked; gcs.Backend publishes it.
func StorageOptions() []objstore.StorageOption {
	return []objstore.StorageOption{
		{Name: AllowHTTP},
		{Name: ApplicationCredentials},
		{Name: ServiceAccount},
		{Name: ServiceAccountKey, Secret: true},
	}
}

// Options are the parsed storage options. With none of the credential
// options, the client uses Application Default Credentials (the
// GOOGLE_APPLICATION_CREDENTIALS file, gcloud's user credentials, or the
// metadata server: GKE workload identity, GCE service accounts).
type Options struct {
	// ServiceAccountPath is a service account JSON key file.
	ServiceAccountPath string
	// ServiceAccountKey is a service account JSON key, inline (secret).
	ServiceAccountKey string
	// ApplicationCredentialsPath is an ADC file (service account or
	// authorized user).
	ApplicationCredentialsPath string
	// Endpoint is the key's gcs_base_url ("" for storage.googleapis.com).
	Endpoint string
	// DisableOAuth sends requests without credentials (the key's
	// disable_oauth: emulators).
	DisableOAuth bool
	// AllowHTTP permits a plain http:// endpoint (test servers).
	AllowHTTP bool
}

// String hides the inline key so Options can be logged or printed with %v.
func (o Options) String() string {
	key := ""
	if o.ServiceAccountKey != "" {
		key = "REDACTED"
	}
	return fmt.Sprintf("{ServiceAccountPath:%s ServiceAccountKey:%s ApplicationCredentialsPath:%s Endpoint:%s DisableOAuth:%t AllowHTTP:%t}",
		o.ServiceAccountPath, key, o.ApplicationCredentialsPath, o.Endpoint, o.DisableOAuth, o.AllowHTTP)
}

// GoString hides the inline key from %#v too.
func (o Options) GoString() string { return "gcsopt.Options" + o.String() }

// Parse validates storage options strictly: unknown keys, malformed
// booleans, a key that is not JSON, more than one credential source, and a
// plain http endpoint without allow_http=true are errors. The inline key's
// value never appears in errors.
func Parse(m map[string]string) (Options, error) {
	var o Options
	_, err := objstore.ParseStorageOptions(m, map[string]objstore.OptionTarget{
		ServiceAccount:         {String: &o.ServiceAccountPath},
		ServiceAccountKey:      {String: &o.ServiceAccountKey},
		ApplicationCredentials: {String: &o.ApplicationCredentialsPath},
		AllowHTTP:              {Bool: &o.AllowHTTP},
	}, nil, func() []string { return objstore.OptionNames(StorageOptions()) })
	if err != nil {
		return Options{}, err
	}
	if err := o.parseKey(); err != nil {
		return Options{}, err
	}
	return o, o.validate()
}

// serviceAccountKey is the part of a key JSON reaper reads itself; the rest
// goes to Google's auth library as it is.
type serviceAccountKey struct {
	GCSBaseURL   string `json:"gcs_base_url"`
	DisableOAuth bool   `json:"disable_oauth"`
}

// parseKey reads the endpoint fields object_store reads from an inline key.
func (o *Options) parseKey() error {
	if o.ServiceAccountKey == "" {
		return nil
	}
	var k serviceAccountKey
	if err := json.Unmarshal([]byte(o.ServiceAccountKey), &k); err != nil {
		// The decoder's message may quote the key's bytes: never shown.
		return fmt.Errorf("storage option %s: not a JSON service account key", ServiceAccountKey)
	}
	o.Endpoint, o.DisableOAuth = k.GCSBaseURL, k.DisableOAuth
	return nil
}

func (o Options) validate() error {
	var sources []string
	for name, v := range map[string]string{
		ServiceAccount:         o.ServiceAccountPath,
		ServiceAccountKey:      o.ServiceAccountKey,
		ApplicationCredentials: o.ApplicationCredentialsPath,
	} {
		if v != "" {
			sources = append(sources, name)
		}
	}
	if len(sources) > 1 {
		slices.Sort(sources)
		return fmt.Errorf("storage options %s: give one credential source, not %d", strings.Join(sources, " and "), len(sources))
	}
	if o.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return fmt.Errorf("storage option %s: gcs_base_url must be http(s)://host[:port]", ServiceAccountKey)
	}
	if u.Scheme == "http" && !o.AllowHTTP {
		return fmt.Errorf("storage option %s: gcs_base_url is plain http: pass %s=true to allow it", ServiceAccountKey, AllowHTTP)
	}
	return nil
}
