package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/lifecycle"
	"github.com/lance-reaper/reaper/internal/lock"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

// A root that moved mid-purge also loses the lease (its renewal and the
// guard read through the moved root): the report names the move, which is
// what an operator must act on, not merely a lost lease.
func TestClassifyRootChanged(t *testing.T) {
	rc := &objstore.RootChangedError{Root: "/data/current", Was: "directory A", Now: "directory B"}
	batch := &objstore.BatchError{Failed: []objstore.KeyError{{Key: "t.lance/data/x", Err: fmt.Errorf("delete t.lance/data/x: %w", rc)}}}
	for name, err := range map[string]error{
		"alone":              fmt.Errorf("purge \"t\": delete objects: %w", batch),
		"under a lost lease": fmt.Errorf("%w: %w", fmt.Errorf("lock: %w", lock.ErrLost), fmt.Errorf("purge \"t\": %w", batch)),
		"with a cancel":      fmt.Errorf("x: %w", errors.Join(lock.ErrLost, context.Canceled, rc)),
	} {
		t.Run(name, func(t *testing.T) {
			a, r, detail := classify(lifecycle.PurgeResult{}, err)
			require.Equal(t, outcome.Failed, a)
			require.Equal(t, outcome.ReasonRootChanged, r)
			require.True(t, strings.HasPrefix(detail, "the root changed: /data/current named directory A"), "detail: %s", detail)
		})
	}
}
