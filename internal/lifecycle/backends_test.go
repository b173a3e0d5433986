package lifecycle

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/azure"
	"github.com/lance-reaper/reaper/internal/objstore/local"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

// backends are the stores every lifecycle test runs against: memory first
// (contract bugs show before I/O noise), then the local filesystem, a real
// S3 server (versitygw) and Azure Blob Storage (Azurite), each under a
// non-trivial root.
func backends() []backend {
	return []backend{
		{"memory", func(t *testing.T) objstore.Store { return objstore.NewMemory() }},
		{"local", func(t *testing.T) objstore.Store {
			s, err := local.Open(t.TempDir())
			require.NoError(t, err)
			return s
		}},
		{"s3", func(t *testing.T) objstore.Store {
			srv := objstoretest.S3(t)
			s, err := all.Open(context.Background(), srv.URI("lancedb/prod"), srv.Options())
			require.NoError(t, err)
			return s
		}},
		{"azure", func(t *testing.T) objstore.Store {
			srv := objstoretest.Azure(t)
			s, err := all.Open(context.Background(), srv.URI("lancedb/prod"), srv.Options())
			require.NoError(t, err)
			// Azurite deletes in time linear in its blob count: a full Blob
			// Batch (256) of a 2,500-object table can outlast the lease's 6s
			// per-request limit there; real Azure answers it in well under
			// a second. Smaller batches keep the fence honest on the emulator.
			s.(*azure.Store).BatchSize = 64
			return s
		}},
	}
}
