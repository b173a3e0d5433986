//go:build !fuzzonly

package lock

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/clocktest"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// forEachBackend runs fn as a subtest per backend (objstoretest.Backends),
// memory first so protocol bugs show before filesystem or network noise.
// Each store is wrapped in an objstoretest.ClockStore, so a test can move
// the store's clock.
func forEachBackend(t *testing.T, fn func(t *testing.T, s *objstoretest.ClockStore)) {
	t.Helper()
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) {
		t.Parallel()
		fn(t, objstoretest.NewClockStore(b.NewRoot(t).Open(t)))
	})
}

// holderClock is a holder's clock that a test moves forward, as a process
// frozen for a while sees it when it resumes.
type holderClock = clocktest.Offset

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// shortLocker renews every 50ms; a lease survives about eight failed or
// slow renewals in a row, so a loaded CI machine does not lose it.
func shortLocker(s objstore.Store) *Locker {
	return &Locker{
		Store: s, TTL: 500 * time.Millisecond, RenewInterval: 50 * time.Millisecond,
		Margin: 100 * time.Millisecond, Logger: quietLogger(),
	}
}

// longLocker never renews or expires within a test.
func longLocker(s objstore.Store) *Locker {
	return &Locker{Store: s, TTL: time.Minute, Logger: quietLogger()}
}

// waitDone waits for ctx to be done, failing the test after a generous
// timeout.
func waitDone(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// eventually polls cond every few milliseconds until it holds or a generous
// deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// writeLease stores a lease body directly, as another holder would.
func writeLease(t *testing.T, s objstore.Store, key string, info Info) objstore.Object {
	t.Helper()
	body, err := encode(info)
	require.NoError(t, err)
	obj, err := s.Put(t.Context(), key, body)
	require.NoError(t, err, "put lease %s", key)
	return obj
}

// deadInfo is the lease of a process that died: a minute's TTL, dated now.
// It becomes expired when the store's clock passes its LastModified plus a
// minute and the store's resolution (see expire).
func deadInfo(generation int64) Info {
	at := time.UnixMilli(time.Now().UnixMilli())
	return Info{
		Owner: "gone-host/1/dead", Token: "0123456789abcdef0123456789abcdef", Generation: generation,
		TTL: time.Minute, AcquiredAt: at, RenewedAt: at, ExpiresAt: at.Add(time.Minute),
	}
}

// expire moves the store's clock past the takeover time of a lease with
// ttl written before now (skew allowance 0).
func expire(s *objstoretest.ClockStore, ttl time.Duration) {
	s.Advance(ttl + objstore.TimeResolution + time.Second)
}
