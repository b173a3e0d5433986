// Package s3opt reads the S3 backend's storage options: the names LanceDB
// and Lance use, strictly, never quoting a secret. It is apart from package
// s3 so that the parser, which takes user input and is fuzzed, builds
// without the AWS SDK: `go test -fuzz` instruments every package of the
// fuzzed test binary, and the SDK is most of package s3's.
package s3opt

import (
	"fmt"
	"net/url"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Storage option names, as LanceDB and Lance spell them.
const (
	Endpoint           = "aws_endpoint"
	Region             = "aws_region"
	AccessKeyID        = "aws_access_key_id"
	SecretAccessKey    = "aws_secret_access_key"
	SessionToken       = "aws_session_token"
	AllowHTTP          = "allow_http"
	VirtualHostedStyle = "aws_virtual_hosted_style_request"
)

// StorageOptions is the one table of the names Parse knows, in the order
// its errors list them, the secret ones marked; s3.Backend publishes it.
func StorageOptions() []objstore.StorageOption {
	return []objstore.StorageOption{
		{Name: AllowHTTP},
		{Name: AccessKeyID},
		{Name: Endpoint},
		{Name: Region},
		{Name: SecretAccessKey, Secret: true},
		{Name: SessionToken, Secret: true},
		{Name: VirtualHostedStyle},
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
func (o Options) GoString() string { return "s3opt.Options" + o.String() }

// Parse validates storage options strictly: unknown keys, malformed
// booleans and endpoints, an http:// endpoint without allow_http=true, and
// half a key pair are errors. Values of secret options never appear in errors.
func Parse(m map[string]string) (Options, error) {
	var o Options
	_, err := objstore.ParseStorageOptions(m, map[string]objstore.OptionTarget{
		Endpoint:           {String: &o.Endpoint},
		Region:             {String: &o.Region},
		AccessKeyID:        {String: &o.AccessKeyID},
		SecretAccessKey:    {String: &o.SecretAccessKey},
		SessionToken:       {String: &o.SessionToken},
		AllowHTTP:          {Bool: &o.AllowHTTP},
		VirtualHostedStyle: {Bool: &o.VirtualHostedStyle},
	}, nil, func() []string { return objstore.OptionNames(StorageOptions()) })
	if err != nil {
		return Options{}, err
	}
	return o, o.validate()
}

func (o Options) validate() error {
	if (o.AccessKeyID == "") != (o.SecretAccessKey == "") {
		return fmt.Errorf("storage options %s and %s must be given together", AccessKeyID, SecretAccessKey)
	}
	if o.SessionToken != "" && o.AccessKeyID == "" {
		return fmt.Errorf("storage option %s needs %s and %s", SessionToken, AccessKeyID, SecretAccessKey)
	}
	if o.Endpoint == "" {
		return nil
	}
	u, err := url.Parse(o.Endpoint)
	if err != nil {
		// The parse error quotes the URL, which may hold a password.
		return fmt.Errorf("storage option %s: not a URL; want http(s)://host[:port]", Endpoint)
	}
	if u.User != nil {
		return fmt.Errorf("storage option %s: credentials in the URL are not accepted; use %s and %s", Endpoint, AccessKeyID, SecretAccessKey)
	}
	if u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("storage option %s=%q: want http(s)://host[:port]", Endpoint, o.Endpoint)
	}
	if u.Scheme == "http" && !o.AllowHTTP {
		return fmt.Errorf("storage option %s=%q is plain http: pass %s=true to allow it", Endpoint, o.Endpoint, AllowHTTP)
	}
	return nil
}
