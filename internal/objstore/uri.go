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
	SchemeGS   Scheme = "gs"
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
	// Bucket and Prefix are set for s3, gs and az roots (Bucket is an az
	// root's container); Prefix has no leading or trailing "/" ("" for the
	// bucket root).
	Bucket string
	Prefix string
	// Account is the Azure storage account an abfss:// root names; "" for
	// az:// roots, whose account comes from the storage options.
	Account string
}

// KeyPath is the location's path inside its store: the directory of a
// file root, the key prefix of a bucket root. Rules about where a location
// sits (inside a table?) read it, whatever the scheme.
func (l Location) KeyPath() string {
	if l.Scheme == SchemeFile {
		return l.Path
	}
	return l.Prefix
}

// Child is the location of the child name (one path segment) of l.
func (l Location) Child(name string) Location {
	if l.Scheme == SchemeFile {
		l.Path = strings.TrimSuffix(l.Path, "/") + "/" + name
		return l
	}
	if l.Prefix != "" {
		name = l.Prefix + "/" + name
	}
	l.Prefix = name
	return l
}

// String renders the canonical URI.
func (l Location) String() string {
	switch l.Scheme {
	case SchemeS3:
		if l.Prefix == "" {
			return "s3://" + l.Bucket
		}
		return "s3://" + l.Bucket + "/" + l.Prefix
	case SchemeGS:
		if l.Prefix == "" {
			return "gs://" + l.Bucket
		}
		return "gs://" + l.Bucket + "/" + l.Prefix
	case SchemeAzure:
		return azureString(l)
	default:
		// Escaped, so that a path holding '%', '?', '#' or a space parses
		// back to the same directory (ParseLocation unescapes file URIs).
		return (&url.URL{Scheme: "file", Path: l.Path}).String()
	}
}

const acceptedForms = "accepted forms: /abs/path, file:///abs/path, s3://bucket/prefix, gs://bucket/prefix, az://container/prefix, abfss://container@account.dfs.core.windows.net/prefix"

// ParseLocation parses a root URI: "/abs/path", "file:///abs/path",
// "s3://bucket/prefix", "gs://bucket/prefix", "az://container/prefix" or
// "abfss://container@account.dfs.core.windows.net/prefix". Anything else is an error naming the URI and the
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
	case strings.HasPrefix(uri, "s3://"), strings.HasPrefix(uri, "gs://"):
		scheme, rest, _ := strings.Cut(uri, "://")
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
		return Location{Scheme: Scheme(scheme), Bucket: bucket, Prefix: prefix}, nil
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
