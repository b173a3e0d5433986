package s3

import (
	"net/http"
	"slices"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
)

// S3 operations, as Operation names them.
const (
	OpListObjectsV2 = "ListObjectsV2"
	OpGetObject     = "GetObject"
	OpHeadObject    = "HeadObject"
	OpPutObject     = "PutObject"
	OpDeleteObject  = "DeleteObject"
	OpDeleteObjects = "DeleteObjects"
	OpCreateBucket  = "CreateBucket"
	OpOther         = "other"
)

var operations = []string{OpListObjectsV2, OpGetObject, OpHeadObject, OpPutObject, OpDeleteObject, OpDeleteObjects, OpCreateBucket, OpOther}

// Operation names the S3 operation of req, for the request metrics
// (objstore.Backend.Operation). Requests built by the AWS SDK
// carry their operation name in the context, which is used when it is one
// of the Op* constants; anything else the SDK sends is OpOther. Other
// requests are classified from method, query and path, assuming path-style
// addressing ("/bucket" or "/bucket/key"): GET with list-type=2 is
// ListObjectsV2, POST with ?delete is DeleteObjects, PUT on a bare bucket is
// CreateBucket, plain GET, HEAD, PUT and DELETE on a key are the object
// operations, and everything else (sub-resources, multipart, copies) is
// OpOther.
func Operation(req *http.Request) string {
	if name := awsmiddleware.GetOperationName(req.Context()); name != "" {
		if slices.Contains(operations, name) {
			return name
		}
		return OpOther
	}
	q := req.URL.Query()
	if req.Method == http.MethodGet && q.Get("list-type") == "2" {
		return OpListObjectsV2
	}
	if req.Method == http.MethodPost && q.Has("delete") {
		return OpDeleteObjects
	}
	// Any other query parameter is a sub-resource or multipart request,
	// except the x-id the SDK adds to name the operation.
	q.Del("x-id")
	if len(q) > 0 || req.Header.Get("X-Amz-Copy-Source") != "" {
		return OpOther
	}
	path := strings.Trim(req.URL.Path, "/")
	if path == "" {
		return OpOther
	}
	onKey := strings.Contains(path, "/")
	switch {
	case req.Method == http.MethodPut && !onKey:
		return OpCreateBucket
	case !onKey:
		return OpOther
	case req.Method == http.MethodGet:
		return OpGetObject
	case req.Method == http.MethodHead:
		return OpHeadObject
	case req.Method == http.MethodPut:
		return OpPutObject
	case req.Method == http.MethodDelete:
		return OpDeleteObject
	default:
		return OpOther
	}
}
