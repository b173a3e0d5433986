package chaos

import (
	"context"
	"path"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// This file runs the crash and pause suites on GCS (fake-gcs-server) and
// Azure Blob Storage (Azurite) as they run on S3: the same fixture, kill
// and stop points at the k-th request seen by the proxy in front of the
// emulator (before forwarding it, or after the server answered), the same
// invariants after every kill, the same converging passes.
//
// Both emulators date their answers with this host's clock, in whole
// seconds (Go's net/http, Node's http), so the suites' waits for the
// store's clock are waits for the host's, rounded down to the second.
// fake-gcs-server stamps LastModified to the microsecond, Azurite to the
// second, like S3.

// TestCrashGCS SIGKILLs `reaper purge` on a GCS root at its k-th request
// (TestCrashS3). A GCS batch delete is one request per key, up to 32 in
// flight, so a kill lands between the single deletes of one batch, some of
// them answered, some sent and never answered, some never sent.
func TestCrashGCS(t *testing.T) {
	t.Parallel()
	kills := knob(t, "REAPER_TEST_CHAOS_GCS_KILLS", 20, 400)
	crashSuite(t, gcsChaos(kills))
}

// TestCrashAzure SIGKILLs `reaper purge` on an Azure root at its k-th
// request (TestCrashS3). A batch delete of up to 256 keys is one Blob Batch
// request.
//
// Fewer kills than on GCS in `make test`: Azurite answers every request
// several times slower (docs/BACKENDS.md), and a kill here took 6-11 s of
// a test slot in runs of the whole package, against 4.5-5.5 s on
// fake-gcs-server. Below 20 kills crashSuite does not require a kill to
// land mid-purge (too likely to miss by chance);
// REAPER_TEST_CHAOS_AZURE_KILLS=20 or more restores that check, and the
// soak runs 400.
func TestCrashAzure(t *testing.T) {
	t.Parallel()
	kills := knob(t, "REAPER_TEST_CHAOS_AZURE_KILLS", 8, 400)
	crashSuite(t, azureChaos(kills))
}

// TestPauseGCS stops `reaper purge` on a GCS root at its k-th request for
// longer than its leases while others take them over (TestPauseS3).
func TestPauseGCS(t *testing.T) {
	t.Parallel()
	rounds := knob(t, "REAPER_TEST_CHAOS_GCS_PAUSES", 4, 60)
	pauseSuite(t, gcsChaos(rounds))
}

// TestPauseAzure stops `reaper purge` on an Azure root at its k-th request
// for longer than its leases while others take them over (TestPauseS3).
func TestPauseAzure(t *testing.T) {
	t.Parallel()
	rounds := knob(t, "REAPER_TEST_CHAOS_AZURE_PAUSES", 4, 60)
	pauseSuite(t, azureChaos(rounds))
}

// remoteLeaseTTL is the lease of the GCS and Azure suites: S3's, for the
// same reason on Azure (LastModified in whole seconds) and on GCS because
// a lease's request timeout is a twentieth of it (TTL/10 margin, half of
// that per request), and the emulators share two loaded cores with the
// suites.
const remoteLeaseTTL = s3LeaseTTL

// gcsChaos and azureChaos are s3Chaos on the other servers: the same
// tables (small: both emulators slow down as they fill), leases and
// skew.
func gcsChaos(kills int) crashConfig {
	cfg := s3Chaos(kills)
	cfg.leaseTTL = remoteLeaseTTL
	cfg.newRoot = func(t *testing.T) *backend { return gcsBackend(t, "db") }
	return cfg
}

func azureChaos(kills int) crashConfig {
	cfg := s3Chaos(kills)
	cfg.leaseTTL = remoteLeaseTTL
	cfg.newRoot = func(t *testing.T) *backend { return azureBackend(t, "db") }
	return cfg
}

// gcsBackend is a root under prefix in a fresh bucket of the shared
// fake-gcs-server.
func gcsBackend(t testing.TB, prefix string) *backend {
	t.Helper()
	srv := objstoretest.GCS(t)
	b := openBackend(t, "gcs", srv.URI(prefix), srv.Options(), "", nil)
	b.endpoint = srv.Endpoint
	b.via = func(endpoint string) map[string]string {
		return objstoretest.GCSServer{Endpoint: endpoint, Bucket: srv.Bucket}.Options()
	}
	b.openParent(t, srv.URI, srv.Options(), prefix)
	return b
}

// azureBackend is a root under prefix in a fresh container of the shared
// Azurite (removed with the test: Azurite slows down with every blob it
// holds).
func azureBackend(t testing.TB, prefix string) *backend {
	t.Helper()
	srv := objstoretest.Azure(t)
	b := openBackend(t, "azure", srv.URI(prefix), srv.Options(), "", nil)
	b.endpoint = srv.Endpoint
	b.via = func(endpoint string) map[string]string {
		via := srv
		via.Endpoint = endpoint
		return via.Options()
	}
	b.openParent(t, srv.URI, srv.Options(), prefix)
	return b
}

// openParent opens the store one level above the root at prefix, where
// the sentinels outside the root live (s3Backend does the same).
func (b *backend) openParent(t testing.TB, uri func(prefix string) string, opts map[string]string, prefix string) {
	t.Helper()
	parent := path.Dir(strings.Trim(prefix, "/"))
	if parent == "." {
		parent = ""
	}
	var err error
	b.parent, err = all.Open(context.Background(), uri(parent), opts)
	require.NoError(t, err)
	b.base = path.Base(strings.Trim(prefix, "/"))
}

// proxy puts a fault proxy in front of the root's server.
func (b *backend) proxy(t testing.TB, seed uint64) *proxy {
	t.Helper()
	var upstream *s3.Client
	if b.srv != nil {
		upstream = b.srv.Client
	}
	require.NotEmpty(t, b.endpoint, "%s root: no server to put a proxy in front of", b.name)
	return newProxyTo(t, b.endpoint, upstream, seed)
}
