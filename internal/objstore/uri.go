package objstore

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Scheme names a backend.
type Scheme string

const (
	SchemeFile Scheme = "file"
	SchemeS3   Scheme = "s3"
	// SchemeAzure is Azure Blob Storage: az://container/prefix, or the
	// abfss://container@account.dfs.core.windows.net/prefix form Lance
	// accepts too.
	SchemeAzure Scheme = "az"
)

// Location is a parsed root URI.
type Location struct {
	Scheme Scheme
	// Path is the absolute, cleaned directory for file roots.
	Path string
	// Bucket and Prefix are set for s3 roots (and az roots, where Bucket is
	// the container); Prefix has no leading or trailing "/" ("" for the
	// bucket root).
	Bucket string
	Prefix string
	// Account is the Azure storage account an abfss:// root names; "" for
	// az:// roots, whose account comes from the storage options.
	Account string
}

// Bucketed reports whether the root is a bucket and key prefix (every
// scheme but file), so Prefix, not Path, holds its key path.
func (l Location) Bucketed() bool { return l.Scheme != SchemeFile }

// String renders the canonical URI.
func (l Location) String() string {
	switch l.Scheme {
	case SchemeS3:
		if l.Prefix == "" {
			return "s3://" + l.Bucket
		}
		return "s3://" + l.Bucket + "/" + l.Prefix
	case SchemeAzure:
		return azureString(l)
	default:
		// Escaped, so that a path holding '%', '?', '#' or a space parses
		// back to the same directory (ParseLocation unescapes file URIs).
		return (&url.URL{Scheme: "file", Path: l.Path}).String()
	}
}

const acceptedForms = "accepted forms: /abs/path, file:///abs/path, s3://bucket/prefix, az://container/prefix, abfss://container@account.dfs.core.windows.net/prefix"

// ParseLocation parses a root URI: "/abs/path", "file:///abs/path" or
// "s3://bucket/prefix". Anything else is an error naming the URI and the
// accepted forms.
func ParseLocation(uri string) (Location, error) {
	bad := func(why string) (Location, error) {
		return Location{}, fmt.Errorf("root URI %q: %s (%s)", uri, why, acceptedForms)
	}
	switch {
	case uri == "":
		return bad("empty")
	case strings.ContainsRune(uri, 0):
		return bad("contains a NUL byte")
	case strings.HasPrefix(uri, "/"):
		return Location{Scheme: SchemeFile, Path: filepath.Clean(uri)}, nil
	case strings.HasPrefix(uri, "file://"):
		u, err := url.Parse(uri)
		if err != nil {
			return bad(err.Error())
		}
		if u.Host != "" && u.Host != "localhost" {
			return bad("file URIs take no host; write file:///abs/path")
		}
		if strings.ContainsRune(u.Path, 0) {
			return bad("contains a NUL byte (%00)")
		}
		if !strings.HasPrefix(u.Path, "/") {
			return bad("file path must be absolute")
		}
		return Location{Scheme: SchemeFile, Path: filepath.Clean(u.Path)}, nil
	case strings.HasPrefix(uri, "s3://"):
		rest := strings.TrimPrefix(uri, "s3://")
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return bad("missing bucket")
		}
		if strings.ContainsAny(bucket, "?#") || strings.ContainsAny(prefix, "?#") {
			return bad("query strings and fragments are not allowed")
		}
		prefix = strings.Trim(prefix, "/")
		if prefix != "" {
			if err := ValidateKey(prefix); err != nil {
				return bad("prefix has an empty, \".\" or \"..\" segment")
			}
		}
		return Location{Scheme: SchemeS3, Bucket: bucket, Prefix: prefix}, nil
	case strings.HasPrefix(uri, "az://"), strings.HasPrefix(uri, "abfss://"):
		loc, why := parseAzure(uri)
		if why != "" {
			return bad(why)
		}
		return loc, nil
	default:
		if i := strings.Index(uri, "://"); i > 0 {
			return bad(fmt.Sprintf("unsupported scheme %q", uri[:i]))
		}
		return bad("relative paths are not accepted; use an absolute path")
	}
}
