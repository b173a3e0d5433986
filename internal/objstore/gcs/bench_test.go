package gcs_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// BenchmarkDeleteBatch compares DeleteBatch with one delete in flight and
// with the default 32, on fake-gcs-server (emulator figures, not cloud
// ones): the JSON API client has no batch call, so concurrency is what a batch
// is made of. Run: go test -run - -bench DeleteBatch ./internal/objstore/gcs/
func BenchmarkDeleteBatch(b *testing.B) {
	const n = 1000
	for _, conc := range []int{1, 32} {
		b.Run(fmt.Sprintf("inflight=%d", conc), func(b *testing.B) {
			srv := objstoretest.GCS(b)
			st := openOn(b, srv, "", 0)
			st.DeleteConcurrency = conc
			keys := make([]string, n)
			for i := range keys {
				keys[i] = fmt.Sprintf("t.lance/data/%05d.lance", i)
			}
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				objstoretest.PutAll(b, st, keys, func(string) []byte { return []byte("x") })
				b.StartTimer()
				require.NoError(b, st.DeleteBatch(b.Context(), keys))
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}
