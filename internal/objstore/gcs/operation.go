package gcs

import (
	"net/http"
	"strings"
)

// Cloud Storage JSON API operations, as Operation names them (the API's
// method names).
const (
	OpObjectsList = "objects.list"
	OpObjectsGet  = "objects.get"
	// OpObjectsGetMedia is objects.get with alt=media: the object's bytes,
	// not its metadata.
	OpObjectsGetMedia = "objects.get_media"
	OpObjectsInsert   = "objects.insert"
	OpObjectsDelete   = "objects.delete"
	OpObjectsPatch    = "objects.patch"
	OpBucketsGet      = "buckets.get"
	OpBucketsInsert   = "buckets.insert"
	OpOther           = "other"
)

// Operation names the JSON API method of req, for the request metrics
// (objstore.Backend.Operation), from its method and path: objects live at
// .../storage/v1/b/BUCKET/o[/OBJECT] (uploads under /upload/), buckets at
// .../storage/v1/b[/BUCKET]. An emulator's base path may come before
// /storage/v1/. Anything else (batch, IAM, other resources) is OpOther.
func Operation(req *http.Request) string {
	path := req.URL.EscapedPath()
	i := strings.Index(path, "/storage/v1/b")
	if i < 0 {
		return OpOther
	}
	upload := strings.HasSuffix(path[:i], "/upload")
	// rest is "", "/BUCKET", "/BUCKET/o" or "/BUCKET/o/OBJECT..."
	rest := path[i+len("/storage/v1/b"):]
	parts := strings.SplitN(strings.TrimPrefix(rest, "/"), "/", 3)
	switch {
	case rest == "" || rest == "/":
		if req.Method == http.MethodPost {
			return OpBucketsInsert
		}
	case len(parts) == 1:
		if req.Method == http.MethodGet {
			return OpBucketsGet
		}
	case parts[1] != "o":
	case upload && req.Method == http.MethodPost:
		return OpObjectsInsert
	case len(parts) == 2 && req.Method == http.MethodGet:
		return OpObjectsList
	case len(parts) == 2 && req.Method == http.MethodPost:
		return OpObjectsInsert
	case len(parts) == 3 && req.Method == http.MethodGet && req.URL.Query().Get("alt") == "media":
		return OpObjectsGetMedia
	case len(parts) == 3 && req.Method == http.MethodGet:
		return OpObjectsGet
	case len(parts) == 3 && req.Method == http.MethodDelete:
		return OpObjectsDelete
	case len(parts) == 3 && req.Method == http.MethodPatch:
		return OpObjectsPatch
	}
	return OpOther
}
