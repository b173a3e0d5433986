package local

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the local backend's root URIs: a bare absolute path or a
// file:// URI, each naming a directory. They render as file:///path
// (objstore.Location.String), escaped, and parse back to the same
// directory.

// Scheme is the local backend's.
const Scheme objstore.Scheme = "file"

// forms are the local backend's root-URI forms.
func forms() []objstore.URIForm {
	return []objstore.URIForm{
		{Prefix: "/", Syntax: "/abs/path", Parse: parsePath},
		{Prefix: "file://", Syntax: "file:///abs/path", Parse: parseFileURI},
	}
}

// parsePath parses a bare absolute path, taken as it is (not unescaped).
func parsePath(uri string) (objstore.Location, error) {
	return objstore.Location{Scheme: Scheme, Path: filepath.Clean(uri)}, nil
}

// parseFileURI parses file:///abs/path (or file://localhost/abs/path),
// unescaping the path.
func parseFileURI(uri string) (objstore.Location, error) {
	u, err := url.Parse(uri)
	switch {
	case err != nil:
		return objstore.Location{}, err
	case u.Host != "" && u.Host != "localhost":
		return objstore.Location{}, errors.New("file URIs take no host; write file:///abs/path")
	case strings.ContainsRune(u.Path, 0):
		return objstore.Location{}, errors.New("contains a NUL byte (%00)")
	case !strings.HasPrefix(u.Path, "/"):
		return objstore.Location{}, errors.New("file path must be absolute")
	}
	return objstore.Location{Scheme: Scheme, Path: filepath.Clean(u.Path)}, nil
}
