package azure

import "net/http"

// Blob service REST operations, as Operation names them (the API's
// operation names).
const (
	OpListBlobs         = "ListBlobs"
	OpGetBlob           = "GetBlob"
	OpGetBlobProperties = "GetBlobProperties"
	OpPutBlob           = "PutBlob"
	OpDeleteBlob        = "DeleteBlob"
	OpBlobBatch         = "BlobBatch"
	OpCreateContainer   = "CreateContainer"
	OpOther             = "other"
)

// Operation names the Blob service operation of req, for the request
// metrics (objstore.Backend.Operation), from its method and query: a
// container operation carries restype=container, a listing comp=list, a
// batch comp=batch; a request on a blob carries no comp. Anything else
// (leases, blocks, properties, snapshots) is OpOther.
func Operation(req *http.Request) string {
	q := req.URL.Query()
	comp, container := q.Get("comp"), q.Get("restype") == "container"
	switch {
	case comp == "list" && req.Method == http.MethodGet:
		return OpListBlobs
	case comp == "batch" && req.Method == http.MethodPost:
		return OpBlobBatch
	case container && comp == "" && req.Method == http.MethodPut:
		return OpCreateContainer
	case container || comp != "" || q.Has("blockid"):
		return OpOther
	}
	switch req.Method {
	case http.MethodGet:
		return OpGetBlob
	case http.MethodHead:
		return OpGetBlobProperties
	case http.MethodPut:
		if req.Header.Get("X-Ms-Copy-Source") != "" {
			return OpOther
		}
		return OpPutBlob
	case http.MethodDelete:
		return OpDeleteBlob
	}
	return OpOther
}
