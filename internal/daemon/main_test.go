package daemon

import (
	"testing"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// TestMain stops the S3, GCS and Azure test servers the bucket-store
// readiness test starts.
func TestMain(m *testing.M) { objstoretest.Main(m) }
