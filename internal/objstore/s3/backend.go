package s3

import (
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/s3/s3opt"
)

// Scheme is the S3 backend's: s3://bucket/prefix.
const Scheme objstore.Scheme = "s3"

// Backend describes the S3 backend to the registry (package all): its
// scheme, its storage options (the secret ones marked), their validation,
// and the classification the retry layer uses.
func Backend() objstore.Backend {
	return objstore.Backend{
		Scheme:  Scheme,
		Forms:   []objstore.URIForm{objstore.BucketForm(Scheme)},
		Name:    "Amazon S3 and S3-compatible stores",
		Options: s3opt.StorageOptions(),
		// What newClient's config.LoadDefaultConfig reads.
		DefaultCredentials: "the AWS SDK chain (environment, shared config and profile, web identity)",
		CheckOptions: func(options map[string]string) error {
			_, err := s3opt.Parse(options)
			return err
		},
		Open:        objstore.Opener(Open),
		IsTransient: IsTransient,
		IsThrottle:  IsThrottle,
		Operation:   Operation,
		// Last-Modified and Date are whole seconds.
		ClockResolution: objstore.TimeResolution,
	}
}
