package interop

import "testing"

// TestLocalRoot runs the suite on a LanceDB root in a local directory.
func TestLocalRoot(t *testing.T) {
	t.Parallel()
	runScenario(t, newLocal(t))
}

// TestS3Root runs the suite on a LanceDB root under a prefix of an S3
// bucket (versitygw), which LanceDB reaches through Lance storage options.
func TestS3Root(t *testing.T) {
	t.Parallel()
	requireNode(t) // skip before starting the S3 server when LanceDB is missing
	runScenario(t, newS3(t))
}

// TestAzureRoot runs the suite on a LanceDB root under a prefix of an
// Azure Blob container (Azurite), which LanceDB reaches through the same
// object_store options reaper takes.
func TestAzureRoot(t *testing.T) {
	t.Parallel()
	requireNode(t) // skip before starting Azurite when LanceDB is missing
	runScenario(t, newAzure(t))
}
