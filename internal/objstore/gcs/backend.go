package gcs

import (
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/gcs/gcsopt"
)

// Scheme is the Google Cloud Storage backend's: gs://bucket/prefix, as
// Lance spells it.
const Scheme objstore.Scheme = "gs"

// Backend describes the Google Cloud Storage backend to the registry
// (package all): its scheme, its storage options (the secret ones marked),
// their validation, and the classification the retry layer uses.
func Backend() objstore.Backend {
	return objstore.Backend{
		Scheme:  Scheme,
		Forms:   []objstore.URIForm{objstore.BucketForm(Scheme)},
		Name:    "Google Cloud Storage",
		Options: gcsopt.StorageOptions(),
		// What credentialOptions leaves to the auth library.
		DefaultCredentials: "Application Default Credentials (GKE workload identity included)",
		CheckOptions: func(options map[string]string) error {
			_, err := gcsopt.Parse(options)
			return err
		},
		Open:        objstore.Opener(Open),
		IsTransient: IsTransient,
		IsThrottle:  IsThrottle,
		Operation:   Operation,
		// Date headers read to the second.
		ClockResolution: objstore.TimeResolution,
	}
}
