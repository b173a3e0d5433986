package daemon

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// grace is a grace timer the test fires.
type grace struct {
	asked chan time.Duration
	fire  chan time.Time
}

func newGrace() *grace {
	return &grace{asked: make(chan time.Duration, 1), fire: make(chan time.Time, 1)}
}

func (g *grace) after(d time.Duration) <-chan time.Time {
	g.asked <- d
	return g.fire
}

func done(ctx context.Context) bool { return ctx.Err() != nil }

func TestDrain(t *testing.T) {
	cases := []struct {
		name string
		// drain is passed to StartDrain (nil: the context carries none).
		drain bool
		// step drives the state machine after the start.
		step func(t *testing.T, interrupt func(), cancel context.CancelFunc, g *grace, d *Drain)
	}{
		{
			name:  "running: passes go on until Stop",
			drain: true,
			step: func(t *testing.T, _ func(), _ context.CancelFunc, _ *grace, d *Drain) {
				require.False(t, d.Draining())
				require.False(t, done(d.PassContext()))
				require.False(t, done(d.LoopContext()))
				d.Stop()
				require.False(t, d.Draining(), "a stop is not a drain")
				require.True(t, done(d.PassContext()))
				require.True(t, done(d.LoopContext()))
			},
		},
		{
			name:  "first interrupt drains; the grace period then cancels the pass",
			drain: true,
			step: func(t *testing.T, interrupt func(), _ context.CancelFunc, g *grace, d *Drain) {
				interrupt()
				<-d.LoopContext().Done()
				require.True(t, d.Draining())
				require.Equal(t, 30*time.Second, <-g.asked)
				require.False(t, done(d.PassContext()), "the table in flight gets its grace")
				g.fire <- time.Now()
				<-d.PassContext().Done()
			},
		},
		{
			name:  "a second signal cancels the pass at once",
			drain: true,
			step: func(t *testing.T, interrupt func(), cancel context.CancelFunc, g *grace, d *Drain) {
				interrupt()
				<-d.LoopContext().Done()
				<-g.asked
				require.False(t, done(d.PassContext()))
				cancel()
				<-d.PassContext().Done()
			},
		},
		{
			name:  "passes ending during the grace period end it",
			drain: true,
			step: func(t *testing.T, interrupt func(), _ context.CancelFunc, g *grace, d *Drain) {
				interrupt()
				<-g.asked
				d.Stop()
				require.True(t, d.Draining())
			},
		},
		{
			name: "without a drain channel, cancellation drains and cancels",
			step: func(t *testing.T, _ func(), cancel context.CancelFunc, _ *grace, d *Drain) {
				require.False(t, d.Draining())
				cancel()
				<-d.PassContext().Done()
				require.True(t, d.Draining())
				require.True(t, done(d.LoopContext()))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var ch chan struct{}
			if tc.drain {
				ch = make(chan struct{})
			}
			g := newGrace()
			d := StartDrain(ctx, ch, DrainOptions{Grace: 30 * time.Second, After: g.after,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			defer d.Stop()
			tc.step(t, func() { close(ch) }, cancel, g, d)
		})
	}
}
