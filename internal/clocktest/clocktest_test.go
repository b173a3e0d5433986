package clocktest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 2, 10, 7, 0, 0, time.Local)

func TestFake(t *testing.T) {
	c := NewFake(t0)
	a := c.NewTimer(2 * time.Second)
	b := c.NewTimer(time.Second)
	stopped := c.NewTimer(time.Second)
	require.Equal(t, 3, c.Pending())
	require.True(t, stopped.Stop())
	require.False(t, stopped.Stop())
	require.NoError(t, c.WaitForTimers(t.Context(), 2))

	c.Advance(time.Second)
	require.Equal(t, t0.Add(time.Second), <-b.C())
	require.Empty(t, a.C())
	c.Advance(5 * time.Second)
	require.Equal(t, t0.Add(2*time.Second), <-a.C(), "fires with its deadline")
	require.False(t, a.Stop(), "already fired")
	require.Empty(t, stopped.C())
	require.Zero(t, c.Pending())

	now := c.NewTimer(0)
	require.Equal(t, t0.Add(6*time.Second), <-now.C(), "a zero timer fires at once")
}

func TestOffset(t *testing.T) {
	var c Offset
	before := time.Now()
	require.False(t, c.Now().Before(before), "the zero value reads the real time")
	c.Advance(time.Hour)
	c.Advance(30 * time.Minute)
	require.Equal(t, 90*time.Minute, c.Offset())
	require.False(t, c.Now().Before(before.Add(90*time.Minute)))
	require.True(t, c.Now().Before(time.Now().Add(91*time.Minute)))
}
