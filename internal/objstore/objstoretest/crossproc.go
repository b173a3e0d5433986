package objstoretest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// Cross-process races check "two processes never both win", which an
// in-process mutex could fake. The parent (RaceProcesses) and each child
// (RaceChild, usually the re-executed test binary) talk over stdin/stdout:
// one "<round> <etag>" line starts a round in every child at once; each child
// answers "<round> <absent> <cas>" with "won" or "lost" for its PutIfAbsent
// and its PutIfMatch.

const (
	won  = "won"
	lost = "lost"
)

func raceAbsentKey(round int) string { return fmt.Sprintf("race/absent-%04d", round) }
func raceCASKey(round int) string    { return fmt.Sprintf("race/cas-%04d", round) }

// RaceChild is the child half: per round it races PutIfAbsent and then
// PutIfMatch (on the round's ETag), both with body id, and reports the
// outcome. It returns nil when in reaches EOF, or the first unexpected error.
func RaceChild(ctx context.Context, s objstore.Store, id string, in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var round int
		var etag string
		if _, err := fmt.Sscanf(sc.Text(), "%d %s", &round, &etag); err != nil {
			return fmt.Errorf("parse round %q: %w", sc.Text(), err)
		}
		_, err := s.PutIfAbsent(ctx, raceAbsentKey(round), []byte(id))
		absent, err := outcome(err)
		if err != nil {
			return fmt.Errorf("round %d: put if absent: %w", round, err)
		}
		_, err = s.PutIfMatch(ctx, raceCASKey(round), []byte(id), etag)
		cas, err := outcome(err)
		if err != nil {
			return fmt.Errorf("round %d: put if match: %w", round, err)
		}
		if _, err := fmt.Fprintf(out, "%d %s %s\n", round, absent, cas); err != nil {
			return fmt.Errorf("report round %d: %w", round, err)
		}
	}
	return sc.Err()
}

func outcome(err error) (string, error) {
	switch {
	case err == nil:
		return won, nil
	case errors.Is(err, objstore.ErrPrecondition):
		return lost, nil
	}
	return "", err
}

// raceChild is the parent's handle on one child process.
type raceChild struct {
	id     string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	stderr *syncBuffer
}

// syncBuffer collects a child's stderr; exec copies into it from its own
// goroutine while failure messages read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// RaceProcesses runs rounds races among procs child processes and asserts
// each race has exactly one winner whose body is stored. newCmd(i) builds
// child i: a command that runs RaceChild with id fmt.Sprint(i) against the
// same storage as s; RaceProcesses wires its stdin, stdout and stderr.
func RaceProcesses(t *testing.T, s objstore.Store, procs, rounds int, newCmd func(i int) *exec.Cmd) {
	t.Helper()
	children := make([]*raceChild, procs)
	for i := range procs {
		children[i] = startChild(t, i, newCmd(i))
	}
	for round := range rounds {
		init := put(t, s, raceCASKey(round), "init")
		// The children block on stdin, so these writes are the start barrier.
		for _, c := range children {
			_, err := fmt.Fprintf(c.in, "%d %s\n", round, init.ETag)
			require.NoError(t, err, "start round %d in child %s (stderr: %s)", round, c.id, c.stderr)
		}
		var absentWinners, casWinners []string
		for _, c := range children {
			require.True(t, c.out.Scan(), "child %s ended in round %d (stderr: %s)", c.id, round, c.stderr)
			var got int
			var absent, cas string
			_, err := fmt.Sscanf(c.out.Text(), "%d %s %s", &got, &absent, &cas)
			require.NoError(t, err, "parse child %s report %q", c.id, c.out.Text())
			require.Equal(t, round, got, "child %s round: got/want", c.id)
			if absent == won {
				absentWinners = append(absentWinners, c.id)
			}
			if cas == won {
				casWinners = append(casWinners, c.id)
			}
		}
		require.Len(t, absentWinners, 1, "round %d: put if absent winners: got %v, want exactly one", round, absentWinners)
		require.Len(t, casWinners, 1, "round %d: put if match winners: got %v, want exactly one", round, casWinners)
		requireBody(t, s, raceAbsentKey(round), absentWinners[0])
		requireBody(t, s, raceCASKey(round), casWinners[0])
	}
	for _, c := range children {
		require.NoError(t, c.in.Close(), "close stdin of child %s", c.id)
		require.NoError(t, c.cmd.Wait(), "child %s exit (stderr: %s)", c.id, c.stderr)
	}
}

func startChild(t *testing.T, i int, cmd *exec.Cmd) *raceChild {
	t.Helper()
	c := &raceChild{id: fmt.Sprint(i), cmd: cmd, stderr: new(syncBuffer)}
	var err error
	c.in, err = cmd.StdinPipe()
	require.NoError(t, err, "stdin of child %d", i)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err, "stdout of child %d", i)
	c.out = bufio.NewScanner(out)
	cmd.Stderr = c.stderr
	require.NoError(t, cmd.Start(), "start child %d: %s", i, strings.Join(cmd.Args, " "))
	t.Cleanup(func() {
		if cmd.ProcessState == nil { // a failed test left it running
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return c
}
