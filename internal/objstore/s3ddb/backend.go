// Package s3ddb is the backend of s3+ddb:// roots: Lance tables on S3 that
// commit through a DynamoDB table (s3+ddb://bucket/prefix?ddbTableName=T).
// The objects are the S3 backend's; the DynamoDB rows (one per version,
// partition key base_uri, sort key version) are reached through
// objstore.CommitRows, so that a purge and retention delete a table's rows
// with its manifests.
package s3ddb

import (
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
	"github.com/lance-reaper/reaper/internal/objstore/s3ddb/ddburi"
)

// Scheme is the backend's.
const Scheme = ddburi.Scheme

// Backend describes the backend to the registry (package all). Its error
// classes are the S3 backend's: every objstore.Store call is an S3 request;
// the DynamoDB requests retry on their own (rows.go).
func Backend() objstore.Backend {
	return objstore.Backend{
		Scheme:             Scheme,
		Forms:              ddburi.Forms(),
		Name:               "Amazon S3 with a DynamoDB commit table (Lance's s3+ddb://)",
		Options:            ddburi.StorageOptions(),
		DefaultCredentials: "the AWS SDK chain (environment, shared config and profile, web identity), for S3 and DynamoDB alike",
		CheckOptions: func(options map[string]string) error {
			_, err := ddburi.ParseOptions(options)
			return err
		},
		Open:        objstore.Opener(Open),
		IsTransient: s3.IsTransient,
		IsThrottle:  s3.IsThrottle,
		// Its objects are S3 requests, and its DynamoDB client names its
		// own operations (Query, BatchWriteItem) the same way.
		Operation:       s3.Operation,
		ClockResolution: objstore.TimeResolution,
	}
}

// s3Options are the options of the S3 store under an s3+ddb:// root.
func s3Options(options map[string]string) map[string]string {
	out := make(map[string]string, len(options))
	for k, v := range options {
		if k != ddburi.Endpoint {
			out[k] = v
		}
	}
	return out
}
