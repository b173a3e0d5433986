package s3

import (
	"fmt"
	"net/url"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Storage option names, as LanceDB and Lance spell them.
const (
	OptEndpoint           = "aws_endpoint"
	OptRegion             = "aws_region"
	OptAccessKeyID        = "aws_access_key_id"
	OptSecretAccessKey    = "aws_secret_access_key"
	OptSessionToken       = "aws_session_token"
	OptAllowHTTP          = "allow_http"
	OptVirtualHostedStyle = "aws_virtual_hosted_style_request"
)

// storageOptions is the one table of the names ParseOptions knows, in the
// order its errors list them, the secret ones marked; Backend publishes it.
func storageOptions() []objstore.StorageOption {
	return []objstore.StorageOption{
		{Name: OptAllowHTTP},
		{Name: OptAccessKeyID},
		{Name: OptEndpoint},
		{Name: OptRegion},
		{Name: OptSecretAccessKey, Secret: true},
		{Name: OptSessionToken, Secret: true},
		{Name: OptVirtualHostedStyle},
	}
}

// Options are the parsed storage options. Empty fields fall back to the AWS
// SDK default chain (environment, shared config and profile, web identity).
type Options struct {
	Endpoint        string
	Region          string
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// AllowHTTP permits a plain http:// endpoint (test servers).
	AllowHTTP bool
	// VirtualHostedStyle addresses buckets as bucket.host; the default is
	// path-style, which S3-compatible servers expect.
	VirtualHostedStyle bool
}

// String hides the secrets so Options can be logged or printed with %v.
func (o Options) String() string {
	redact := func(s string) string {
		if s == "" {
			return ""
		}
		return "REDACTED"
	}
	return fmt.Sprintf("{Endpoint:%s Region:%s AccessKeyID:%s SecretAccessKey:%s SessionToken:%s AllowHTTP:%t VirtualHostedStyle:%t}",
		o.Endpoint, o.Region, o.AccessKeyID, redact(o.SecretAccessKey), redact(o.SessionToken), o.AllowHTTP, o.VirtualHostedStyle)
}

// GoString hides the secrets from %#v too.
func (o Options) GoString() string { return "s3.Options" + o.String() }

// ParseOptions validates storage options strictly: unknown keys, malformed
// booleans and endpoints, an http:// endpoint without allow_http=true, and
// half a key pair are errors. Values of secret options never appear in errors.
func ParseOptions(m map[string]string) (Options, error) {
	var o Options
	_, err := objstore.ParseStorageOptions(m, map[string]objstore.OptionTarget{
		OptEndpoint:           {String: &o.Endpoint},
		OptRegion:             {String: &o.Region},
		OptAccessKeyID:        {String: &o.AccessKeyID},
		OptSecretAccessKey:    {String: &o.SecretAccessKey},
		OptSessionToken:       {String: &o.SessionToken},
		OptAllowHTTP:          {Bool: &o.AllowHTTP},
		OptVirtualHostedStyle: {Bool: &o.VirtualHostedStyle},
	}, nil, Backend().OptionNames)
	if err != nil {
		return Options{}, err
	}
	return o, o.validate()
}

func (o Options) validate() error {
	if (o.AccessKeyID == "") != (o.SecretAccessKey == "") {
		return fmt.Errorf("storage options %s and %s must be given together", OptAccessKeyID, OptSecretAccessKey)
	}
	if o.SessionToken != "" && o.AccessKeyID == "" {
		return fmt.Errorf("storage option %s needs %s and %s", OptSessionToken, OptAccessKeyID, OptSecretAccessKey)
	}
	if o.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil {
		// The parse error quotes the URL, which may hold a password.
		return fmt.Errorf("storage option %s: not a URL; want http(s)://host[:port]", OptEndpoint)
	}
	if u.User != nil {
		return fmt.Errorf("storage option %s: credentials in the URL are not accepted; use %s and %s", OptEndpoint, OptAccessKeyID, OptSecretAccessKey)
	}
	if u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("storage option %s=%q: want http(s)://host[:port]", OptEndpoint, o.Endpoint)
	}
	if u.Scheme == "http" && !o.AllowHTTP {
		return fmt.Errorf("storage option %s=%q is plain http: pass %s=true to allow it", OptEndpoint, o.Endpoint, OptAllowHTTP)
	}
	return nil
}
