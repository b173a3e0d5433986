// Package ddburi reads the roots and storage options of s3+ddb:// roots:
// S3 tables that commit through a DynamoDB table, as Lance writes them
// (s3+ddb://bucket/prefix?ddbTableName=T). It is apart from package s3ddb
// so that the fuzz target of the root-URI grammar (internal/objstore) and
// config validation build without the AWS SDK.
package ddburi

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3/s3opt"
)

// Scheme is the backend's: s3+ddb://bucket/prefix?ddbTableName=T.
const Scheme objstore.Scheme = "s3+ddb"

// TableQuery is the one query parameter Lance accepts on an s3+ddb:// URI.
const TableQuery = "ddbTableName"

// Endpoint is the storage option Lance reads the DynamoDB endpoint from
// (its get_dynamodb_endpoint); without it Lance reads DYNAMODB_ENDPOINT.
const Endpoint = "dynamodb_endpoint"

// EnvEndpoint is the environment variable Lance falls back to for the
// DynamoDB endpoint when the storage option is absent.
const EnvEndpoint = "DYNAMODB_ENDPOINT"

// tableName is DynamoDB's rule for table names. Lance matches the query
// value only when URL decoding left it unchanged, so no escape is accepted.
var tableName = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)

// Forms are the backend's root-URI forms.
func Forms() []objstore.URIForm {
	return []objstore.URIForm{{
		Prefix: string(Scheme) + "://",
		Syntax: string(Scheme) + "://bucket/prefix?" + TableQuery + "=T",
		Parse:  parse,
	}}
}

// DDB is the Form of an s3+ddb:// location: the DynamoDB table its tables
// commit through.
type DDB struct {
	Table string
}

// URI renders l as s3+ddb://bucket/prefix?ddbTableName=T.
func (f DDB) URI(l objstore.Location) string {
	s := string(Scheme) + "://" + l.Bucket
	if l.Prefix != "" {
		s += "/" + l.Prefix
	}
	return s + "?" + TableQuery + "=" + f.Table
}

// Table is the DynamoDB table loc commits through ("" for a location of
// another form).
func Table(loc objstore.Location) string {
	if f, ok := loc.Form.(DDB); ok {
		return f.Table
	}
	return ""
}

// S3 is the plain s3:// location of loc's objects.
func S3(loc objstore.Location) objstore.Location {
	return objstore.Location{Scheme: "s3", Bucket: loc.Bucket, Prefix: loc.Prefix}
}

// parse parses s3+ddb://bucket/prefix?ddbTableName=T: exactly one query
// parameter, as Lance requires, and no fragment.
func parse(uri string) (objstore.Location, error) {
	base, query, ok := strings.Cut(uri, "?")
	if !ok {
		return objstore.Location{}, fmt.Errorf("missing ?%s=<DynamoDB table> (Lance commits s3+ddb:// tables through it)", TableQuery)
	}
	if strings.ContainsAny(query, "#?&") || strings.Contains(base, "#") {
		return objstore.Location{}, fmt.Errorf("want exactly one query parameter, %s, and no fragment", TableQuery)
	}
	key, table, _ := strings.Cut(query, "=")
	if key != TableQuery {
		return objstore.Location{}, fmt.Errorf("want exactly one query parameter, %s, and no fragment", TableQuery)
	}
	if !tableName.MatchString(table) {
		return objstore.Location{}, fmt.Errorf("%s=%q is not a DynamoDB table name (3 to 255 of A-Z, a-z, 0-9, '_', '-', '.')", TableQuery, table)
	}
	loc, err := objstore.ParseBucket(Scheme, base)
	if err != nil {
		return objstore.Location{}, err
	}
	loc.Form = DDB{Table: table}
	return loc, nil
}

// StorageOptions are the S3 backend's options and dynamodb_endpoint, in
// the order errors list them.
func StorageOptions() []objstore.StorageOption {
	return append(s3opt.StorageOptions(), objstore.StorageOption{Name: Endpoint})
}

// Options are an s3+ddb:// root's parsed storage options: the S3 ones,
// which the DynamoDB client shares (credentials, region, allow_http), and
// the DynamoDB endpoint ("" for the environment's or AWS's).
type Options struct {
	S3       s3opt.Options
	Endpoint string
}

// ParseOptions validates storage options strictly, as s3opt.Parse does,
// with dynamodb_endpoint held to the rule aws_endpoint follows: a URL
// without credentials, plain http only with allow_http=true.
func ParseOptions(m map[string]string) (Options, error) {
	rest := map[string]string{}
	var o Options
	for k, v := range m {
		switch {
		case k == Endpoint:
			o.Endpoint = v
		case !known(k):
			return Options{}, fmt.Errorf("unknown storage option %q (accepted: %s)", k, strings.Join(objstore.OptionNames(StorageOptions()), ", "))
		default:
			rest[k] = v
		}
	}
	var err error
	if o.S3, err = s3opt.Parse(rest); err != nil {
		return Options{}, err
	}
	if _, set := m[Endpoint]; set {
		if err := CheckEndpoint(o.Endpoint, Endpoint, o.S3.AllowHTTP); err != nil {
			return Options{}, err
		}
	}
	return o, nil
}

func known(name string) bool {
	for _, o := range s3opt.StorageOptions() {
		if o.Name == name {
			return true
		}
	}
	return false
}

// CheckEndpoint holds a DynamoDB endpoint, from the storage option or from
// the environment (from names which), to aws_endpoint's rule.
func CheckEndpoint(endpoint, from string, allowHTTP bool) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		// The parse error quotes the URL, which may hold a password.
		return fmt.Errorf("%s: not a URL; want http(s)://host[:port]", from)
	}
	switch {
	case u.User != nil:
		return fmt.Errorf("%s: credentials in the URL are not accepted; use %s and %s", from, s3opt.AccessKeyID, s3opt.SecretAccessKey)
	case u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return fmt.Errorf("%s=%q: want http(s)://host[:port]", from, endpoint)
	case u.Scheme == "http" && !allowHTTP:
		return fmt.Errorf("%s=%q is plain http: pass %s=true to allow it", from, endpoint, s3opt.AllowHTTP)
	}
	return nil
}

// BaseURI is the partition key Lance files a table's rows under: the
// table's key path inside the bucket (object_store's Path of the table
// URI: no bucket, no leading or trailing "/"). prefix is the root's, table
// the table's directory key below it.
func BaseURI(prefix, table string) (string, error) {
	table = strings.Trim(table, "/")
	if table == "" {
		return "", errors.New("empty table key")
	}
	if prefix == "" {
		return table, nil
	}
	return prefix + "/" + table, nil
}
