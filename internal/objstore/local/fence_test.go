package local_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
)

// batchKeys writes n keys in each of dirs, plus a keeper in each so none
// is emptied, and returns the keys in the order DeleteBatch unlinks them:
// directory by directory in key order, keys in the order given.
func batchKeys(t *testing.T, root string, n int, dirs ...string) []string {
	t.Helper()
	var keys []string
	for _, dir := range dirs {
		writeFile(t, root, dir+"keep", "keep")
		for i := range n {
			k := fmt.Sprintf("%s%d", dir, i)
			writeFile(t, root, k, k)
			keys = append(keys, k)
		}
	}
	return keys
}

// A fence that refuses after k questions stops DeleteBatch after exactly
// k-1 unlinks (the batch asks once up front, before resolving anything);
// the other keys stay and come back wrapping ErrFenced, also those of
// directories not reached yet. Between two directories the fence is also
// asked once for the rmdir that tries to prune the first.
func TestFenceStopsDeleteBatch(t *testing.T) {
	oneDir := []string{"t.lance/data/"}
	twoDirs := []string{"t.lance/_versions/", "t.lance/data/"}
	for _, tc := range []struct {
		name     string
		dirs     []string
		allowed  int
		unlinked int
	}{
		{"none", oneDir, 0, 0},
		{"only the question up front", oneDir, 1, 0},
		{"one", oneDir, 2, 1},
		{"half", oneDir, 6, 5},
		{"all but one", oneDir, 10, 9},
		{"first directory", twoDirs, 6, 5},
		{"first directory and its rmdir", twoDirs, 7, 5},
		{"into the second directory", twoDirs, 9, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			keys := batchKeys(t, root, 10/len(tc.dirs), tc.dirs...)
			s := open(t, root)
			f := &objstoretest.Fence{Allowed: int64(tc.allowed)}
			err := s.DeleteBatch(objstore.WithFence(t.Context(), f), keys)
			var be *objstore.BatchError
			require.ErrorAs(t, err, &be, "delete batch under a fence allowing %d", tc.allowed)
			require.Len(t, be.Failed, len(keys)-tc.unlinked, "failed keys: got/want")
			for i, fe := range be.Failed {
				require.Equal(t, keys[tc.unlinked+i], fe.Key, "failed key %d", i)
				require.ErrorIs(t, fe.Err, objstore.ErrFenced, "failed key %s", fe.Key)
				require.ErrorIs(t, fe.Err, objstoretest.ErrRefused, "failed key %s", fe.Key)
			}
			for i, key := range keys {
				if i < tc.unlinked {
					require.NoFileExists(t, filepath.Join(root, key), "key %d, allowed", i)
				} else {
					requireContent(t, filepath.Join(root, key), key)
				}
			}
			require.Equal(t, int64(tc.allowed+1), f.Calls(), "questions: the allowed ones and the refusal, none after it")
		})
	}
}

// flipFence allows until refuse is set; calls counts its questions. Both
// are atomic: the fence is flipped from the test while a batch holds it.
type flipFence struct {
	refuse atomic.Bool
	calls  atomic.Int64
}

func (f *flipFence) Allow() (time.Duration, error) {
	f.calls.Add(1)
	if f.refuse.Load() {
		return 0, objstoretest.ErrRefused
	}
	return 0, nil
}

// A batch that waits on the directory's flock while its lease lapses
// unlinks nothing once it gets the lock: the fence is asked after the lock,
// not before.
func TestFenceAskedAfterTheLock(t *testing.T) {
	root := t.TempDir()
	keys := batchKeys(t, root, 5, "t.lance/_versions/", "t.lance/data/")
	s := open(t, root)
	dir, err := os.Open(filepath.Join(root, "t.lance/_versions"))
	require.NoError(t, err)
	defer dir.Close()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(int(dir.Fd()), &st))
	require.NoError(t, unix.Flock(int(dir.Fd()), unix.LOCK_EX), "hold the directory's flock")

	f := &flipFence{}
	done := make(chan error, 1)
	go func() { done <- s.DeleteBatch(objstore.WithFence(t.Context(), f), keys) }()
	require.Eventually(t, func() bool { return flockWaiter(t, st.Ino) }, 10*time.Second, time.Millisecond,
		"DeleteBatch waits on the directory's flock")
	require.Equal(t, int64(1), f.calls.Load(), "the fence is asked once up front, then only once the lock is held")
	f.refuse.Store(true) // the lease lapses while the batch waits
	require.NoError(t, unix.Flock(int(dir.Fd()), unix.LOCK_UN), "release the flock")

	err = <-done
	var be *objstore.BatchError
	require.ErrorAs(t, err, &be)
	require.Len(t, be.Failed, len(keys), "every key fails")
	for _, fe := range be.Failed {
		require.ErrorIs(t, fe.Err, objstore.ErrFenced, "key %s", fe.Key)
	}
	for _, key := range keys {
		requireContent(t, filepath.Join(root, key), key)
	}
	require.Equal(t, int64(2), f.calls.Load(), "asked up front, then once after the lock: refused, asked no more")
}

// flockWaiter reports whether /proc/locks shows a blocked FLOCK request on
// inode ino: a line "N: -> FLOCK ADVISORY WRITE pid maj:min:ino 0 EOF".
func flockWaiter(t *testing.T, ino uint64) bool {
	t.Helper()
	f, err := os.Open("/proc/locks")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 || fields[1] != "->" || fields[2] != "FLOCK" {
			continue
		}
		if strings.HasSuffix(fields[6], fmt.Sprintf(":%d", ino)) {
			return true
		}
	}
	require.NoError(t, sc.Err())
	return false
}

// A refusing fence stops PruneEmpty between two rmdirs: it asks once up
// front, then before each rmdir.
func TestFenceStopsPruneEmpty(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "p/a/b"), 0o755))
	s := open(t, root)
	f := &objstoretest.Fence{Allowed: 2}
	err := s.PruneEmpty(objstore.WithFence(t.Context(), f), "p/")
	require.ErrorIs(t, err, objstore.ErrFenced)
	require.True(t, errors.Is(err, objstoretest.ErrRefused), "the fence's own error is in the chain")
	require.NoDirExists(t, filepath.Join(root, "p/a/b"), "the one allowed rmdir")
	require.DirExists(t, filepath.Join(root, "p/a"), "refused")
}

// stallFence says yes, then holds its caller until released: a process
// stopped right after its fence allowed a request.
type stallFence struct {
	asked   chan struct{} // closed when Allow is first called
	release chan struct{}
}

func (f *stallFence) Allow() (time.Duration, error) {
	close(f.asked)
	<-f.release
	return 0, nil
}

// A PutIfAbsent stopped between its fence and its link holds the
// directory's flock (shared), so a compare-and-swap beside it (a lease
// takeover) cannot land in that window: the stopped writer's purge commit
// could otherwise appear after another process took its lease over and
// finished the table. Found by TestPauseLocal under load.
func TestPutIfAbsentFencesUnderTheLock(t *testing.T) {
	root := t.TempDir()
	s := open(t, root)
	f := &stallFence{asked: make(chan struct{}), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := s.PutIfAbsent(objstore.WithFence(t.Context(), f), "t.reaper-purge", []byte("commit"))
		done <- err
	}()
	<-f.asked
	dir, err := os.Open(root)
	require.NoError(t, err)
	defer dir.Close()
	err = unix.Flock(int(dir.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	require.ErrorIs(t, err, unix.EWOULDBLOCK, "an exclusive lock (a compare-and-swap) must wait while the writer is between fence and link")
	require.NoError(t, unix.Flock(int(dir.Fd()), unix.LOCK_SH|unix.LOCK_NB), "other creates and unconditional deletes share it")
	require.NoError(t, unix.Flock(int(dir.Fd()), unix.LOCK_UN))
	close(f.release)
	require.NoError(t, <-done)
	requireContent(t, filepath.Join(root, "t.reaper-purge"), "commit")
	require.NoError(t, unix.Flock(int(dir.Fd()), unix.LOCK_EX|unix.LOCK_NB), "released after the link")
}
