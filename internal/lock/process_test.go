//go:build !fuzzonly

package lock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// The multi-process tests re-execute this test binary. childMode selects
// what a child does; the rest of its parameters arrive in env variables too.
const (
	childModeEnv  = "REAPER_LOCK_TEST_CHILD"
	childItersEnv = "REAPER_LOCK_TEST_ITERS"
)

const (
	counterKey = "state/counter"
	ownerKey   = "state/owner"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	code := m.Run()
	stopBackends()
	os.Exit(code)
}

// childResult is what a child prints on stdout as one JSON line.
type childResult struct {
	Acquired   int    `json:"acquired"`
	Overlaps   int    `json:"overlaps"`
	Won        bool   `json:"won"`
	Generation int64  `json:"generation"`
	Err        string `json:"err,omitempty"`
	Tries      int    `json:"tries"`
}

func childMain(mode string) int {
	res, err := runChild(mode)
	if err != nil {
		res.Err = err.Error()
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 2
	}
	if res.Err != "" {
		return 1
	}
	return 0
}

func runChild(mode string) (childResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := openChildStore(ctx)
	if err != nil {
		return childResult{}, err
	}
	// Barrier: start racing only when the parent has started everyone.
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return childResult{}, fmt.Errorf("read start signal: %w", err)
	}
	lk := &Locker{Store: s, TTL: time.Minute, Logger: quietLogger()}
	switch mode {
	case "counter":
		iters, err := strconv.Atoi(os.Getenv(childItersEnv))
		if err != nil {
			return childResult{}, fmt.Errorf("parse iterations: %w", err)
		}
		return childCounter(ctx, lk, iters)
	case "takeover":
		lease, err := lk.Acquire(ctx, testKey)
		if errors.Is(err, ErrLocked) {
			return childResult{}, nil
		}
		if err != nil {
			return childResult{}, err
		}
		// Exit holding the lease, so every rival meets a live holder.
		return childResult{Won: true, Generation: lease.Info().Generation}, nil
	}
	return childResult{}, fmt.Errorf("unknown child mode %q", mode)
}

// childCounter takes the lock iters times and, under it, increments a
// counter with a plain read-modify-write. Lost updates or a foreign token
// in the owner object reveal two holders at once.
func childCounter(ctx context.Context, lk *Locker, iters int) (childResult, error) {
	var res childResult
	for res.Acquired < iters {
		res.Tries++
		lease, err := lk.Acquire(ctx, testKey)
		if errors.Is(err, ErrLocked) {
			time.Sleep(time.Duration(1000+rand.IntN(7000)) * time.Microsecond) // back off, then poll again
			continue
		}
		if err != nil {
			return res, err
		}
		overlap, err := incrementUnder(ctx, lk.Store, lease)
		if err != nil {
			return res, err
		}
		if overlap {
			res.Overlaps++
		}
		if err := lease.Release(ctx); err != nil {
			return res, err
		}
		res.Acquired++
	}
	return res, nil
}

func incrementUnder(ctx context.Context, s objstore.Store, lease *Lease) (overlap bool, err error) {
	token := lease.Info().Token
	if _, err := s.Put(ctx, ownerKey, []byte(token)); err != nil {
		return false, err
	}
	n := 0
	data, _, err := s.Get(ctx, counterKey, 1<<20)
	switch {
	case errors.Is(err, objstore.ErrNotFound):
	case err != nil:
		return false, err
	default:
		if n, err = strconv.Atoi(string(data)); err != nil {
			return false, fmt.Errorf("parse counter: %w", err)
		}
	}
	if err := lease.Check(); err != nil {
		return false, err
	}
	if _, err := s.Put(ctx, counterKey, []byte(strconv.Itoa(n+1))); err != nil {
		return false, err
	}
	owner, _, err := s.Get(ctx, ownerKey, 1<<20)
	if err != nil {
		return false, err
	}
	return string(owner) != token, lease.Check()
}

// runChildren starts n children in mode with env, releases them together
// and returns their results.
func runChildren(t *testing.T, n int, mode string, env []string) []childResult {
	t.Helper()
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *os.File
	}
	children := make([]child, n)
	for i := range children {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^$")
		// A -race binary sleeps a second at exit by default; children skip it.
		cmd.Env = append(append(os.Environ(), childModeEnv+"="+mode, "GORACE=atexit_sleep_ms=0"), env...)
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		out, err := os.CreateTemp(t.TempDir(), "child-*.json")
		require.NoError(t, err)
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		require.NoError(t, cmd.Start(), "start child %d", i)
		children[i] = child{cmd, stdin, out}
	}
	for _, c := range children {
		_, err := io.WriteString(c.stdin, "go\n")
		require.NoError(t, err)
		require.NoError(t, c.stdin.Close())
	}
	results := make([]childResult, n)
	for i, c := range children {
		waitErr := c.cmd.Wait()
		data, err := os.ReadFile(c.out.Name())
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &results[i]), "child %d output %q (exit: %v)", i, data, waitErr)
		t.Logf("child %d: %+v", i, results[i])
		require.Empty(t, results[i].Err, "child %d", i)
		require.NoError(t, waitErr, "child %d", i)
	}
	return results
}

func TestProcessesMutualExclusion(t *testing.T) {
	t.Parallel()
	forEachChildBackend(t, func(t *testing.T, s objstore.Store, env []string, iters int) {
		const children = 4
		results := runChildren(t, children, "counter", append(env, childItersEnv+"="+strconv.Itoa(iters)))
		total, overlaps := 0, 0
		for _, r := range results {
			total += r.Acquired
			overlaps += r.Overlaps
		}
		require.Equal(t, children*iters, total, "acquisitions")
		require.Zero(t, overlaps, "holders overlapped")
		data, _, err := s.Get(t.Context(), counterKey, 1<<20)
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(total), string(data), "counter: got/want (a lost update means two holders)")
		_, err = Read(t.Context(), s, testKey)
		require.ErrorIs(t, err, objstore.ErrNotFound, "every holder released")
	})
}

func TestProcessesExpiredTakeover(t *testing.T) {
	t.Parallel()
	forEachChildBackend(t, func(t *testing.T, s objstore.Store, env []string, _ int) {
		old := deadInfo(9)
		old.TTL = time.Millisecond
		obj := writeLease(t, s, testKey, old)
		// The children read the real store's clock: wait until it passes
		// the dead lease's takeover time (about a second, the resolution),
		// with room for a child whose first reading of the clock (a lower
		// bound) trails ours by up to two resolutions.
		_ = obj
		head, err := s.Head(t.Context(), testKey)
		require.NoError(t, err)
		takeoverAt := old.TakeoverAt(head.LastModified, 2*objstore.TimeResolution)
		eventually(t, "the store's clock to pass the dead lease's takeover time", func() bool {
			now, err := s.Now(t.Context())
			return err == nil && !now.Before(takeoverAt)
		})
		results := runChildren(t, 4, "takeover", env)
		winners := 0
		for i, r := range results {
			if r.Won {
				winners++
				require.Equal(t, old.Generation+1, r.Generation, "child %d generation", i)
			}
		}
		require.Equal(t, 1, winners, "exactly one process takes over")
		stored, err := Read(t.Context(), s, testKey)
		require.NoError(t, err)
		require.Equal(t, old.Generation+1, stored.Generation)
		now, err := s.Now(t.Context())
		require.NoError(t, err)
		require.True(t, now.Before(stored.TakeoverAt(stored.Modified, 0)), "the winner holds a live lease")
	})
}
