package daemon

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/worker"
)

// headFails fails every Head.
type headFails struct {
	objstore.Store
	err error
}

func (h headFails) Head(context.Context, string) (objstore.Object, error) {
	return objstore.Object{}, h.err
}

// probes is a Readiness over named roots whose stores the test chooses,
// counting how often the roots are listed.
type probes struct {
	stores   map[string]objstore.Store
	rootsErr error
	openErr  error
	listed   int
	now      time.Time
}

func (p *probes) readiness() *Readiness {
	return &Readiness{
		Roots: func(context.Context) ([]config.Root, error) {
			p.listed++
			var rs []config.Root
			for _, u := range []string{"a", "b"} {
				if _, ok := p.stores[u]; ok {
					rs = append(rs, config.Root{URI: u})
				}
			}
			return rs, p.rootsErr
		},
		Open: func(_ context.Context, r config.Root) (objstore.Store, error) {
			if p.openErr != nil {
				return nil, p.openErr
			}
			return p.stores[r.URI], nil
		},
		TTL: time.Minute,
		Now: func() time.Time { return p.now },
	}
}

func TestReadinessProbe(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		p       *probes
		wantErr string
	}{
		{"every root readable", &probes{stores: map[string]objstore.Store{"a": objstore.NewMemory(), "b": objstore.NewMemory()}}, ""},
		{"a PAUSE is still ready", &probes{stores: map[string]objstore.Store{"a": paused(t)}}, ""},
		{"roots cannot be listed", &probes{stores: map[string]objstore.Store{"a": objstore.NewMemory()}, rootsErr: boom}, "boom"},
		{"a root cannot be opened", &probes{stores: map[string]objstore.Store{"a": objstore.NewMemory()}, openErr: boom}, "root a: boom"},
		{"a root cannot be read", &probes{stores: map[string]objstore.Store{"a": objstore.NewMemory(), "b": headFails{objstore.NewMemory(), boom}}}, "root b: boom"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.readiness().Check(context.Background())
			if tc.wantErr == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}

func paused(t *testing.T) objstore.Store {
	s := objstore.NewMemory()
	_, err := s.Put(context.Background(), worker.PauseKey, []byte("maintenance"))
	require.NoError(t, err)
	return s
}

// Answers are cached for TTL; a pass that reached every root refreshes
// the cache as ready, one that did not leaves it.
func TestReadinessCache(t *testing.T) {
	p := &probes{stores: map[string]objstore.Store{"a": headFails{objstore.NewMemory(), errors.New("down")}}, now: time.Unix(1000, 0)}
	r := p.readiness()
	ctx := context.Background()
	require.Error(t, r.Check(ctx))
	require.Error(t, r.Check(ctx))
	require.Equal(t, 1, p.listed, "cached within the TTL")

	r.PassFinished(&worker.Report{Roots: []*worker.RootReport{{Root: "a", Err: errors.New("open")}}})
	require.Error(t, r.Check(ctx), "a pass with a failed root proves nothing")

	r.PassFinished(&worker.Report{Roots: []*worker.RootReport{{Root: "a"}}})
	require.NoError(t, r.Check(ctx), "a pass that reached every root")
	require.Equal(t, 1, p.listed)

	p.now = p.now.Add(time.Minute)
	require.Error(t, r.Check(ctx), "probed again after the TTL")
	require.Equal(t, 2, p.listed)
}
