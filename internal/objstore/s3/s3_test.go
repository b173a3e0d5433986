package s3_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/all"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/s3"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

// openTestStore opens a store on a fresh versitygw bucket under prefix.
func openTestStore(t *testing.T, prefix string, pageSize int32) (objstoretest.S3Server, *s3.Store) {
	t.Helper()
	srv := objstoretest.S3(t)
	loc, err := all.ParseLocation(srv.URI(prefix))
	require.NoError(t, err, "parse %s", srv.URI(prefix))
	st, err := s3.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
	require.NoError(t, err, "open %s", srv.URI(prefix))
	st.PageSize = pageSize
	return srv, st
}

func TestConformance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		_, st := openTestStore(t, "", 0)
		return st
	})
}

func TestConformanceUnderPrefix(t *testing.T) {
	const pageSize = 7 // small pages: every paging path is crossed cheaply
	objstoretest.Run(t, func(t *testing.T) objstore.Store {
		srv, st := openTestStore(t, "some/prefix", pageSize)
		// Neighbours outside the root: the suite's exact listings fail if
		// they leak in, and its deletes must leave them alone.
		for _, k := range []string{"some/prefixed", "some/other/x", "top"} {
			_, err := srv.Client.PutObject(t.Context(), &awss3.PutObjectInput{Bucket: &srv.Bucket, Key: &k, Body: strings.NewReader(k)})
			require.NoError(t, err, "put neighbour %s", k)
		}
		t.Cleanup(func() {
			for _, k := range []string{"some/prefixed", "some/other/x", "top"} {
				_, err := srv.Client.HeadObject(context.Background(), &awss3.HeadObjectInput{Bucket: &srv.Bucket, Key: &k})
				assert.NoError(t, err, "neighbour %s outside the root must survive", k)
			}
		})
		return st
	}, objstoretest.WithPageSize(pageSize))
}

func TestPrefixIsolation(t *testing.T) {
	srv := objstoretest.S3(t)
	open := func(prefix string) *s3.Store {
		loc, err := all.ParseLocation(srv.URI(prefix))
		require.NoError(t, err)
		st, err := s3.Open(t.Context(), loc, srv.Options(), objstore.OpenEnv{})
		require.NoError(t, err)
		return st
	}
	inner, outer := open("some/prefix"), open("")
	ctx := t.Context()
	_, err := outer.Put(ctx, "some/prefixed", []byte("neighbour"))
	require.NoError(t, err)
	_, err = inner.Put(ctx, "k", []byte("v"))
	require.NoError(t, err)

	var keys []string
	require.NoError(t, inner.Walk(ctx, "", func(objs []objstore.Object) error {
		for _, o := range objs {
			keys = append(keys, o.Key)
		}
		return nil
	}))
	require.Equal(t, []string{"k"}, keys, "keys under some/prefix: got/want")
	_, _, err = outer.Get(ctx, "some/prefix/k", 1<<20)
	require.NoError(t, err, "inner key seen from the bucket root")
	require.Equal(t, "s3://"+srv.Bucket+"/some/prefix", inner.URI())
}

func TestConcurrentPutIfAbsentOneWinner(t *testing.T) {
	_, st := openTestStore(t, "", 0)
	const racers = 32
	for round := range 5 {
		key := fmt.Sprintf("lock/%d", round)
		var (
			wins, lost atomic.Int32
			wg         sync.WaitGroup
			start      = make(chan struct{})
			errs       = make(chan error, racers)
		)
		for i := range racers {
			wg.Go(func() {
				<-start
				_, err := st.PutIfAbsent(t.Context(), key, fmt.Appendf(nil, "racer %d", i))
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, objstore.ErrPrecondition):
					lost.Add(1)
				default:
					errs <- err
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d: unexpected error", round)
		}
		require.Equal(t, int32(1), wins.Load(), "round %d winners: got/want", round)
		require.Equal(t, int32(racers-1), lost.Load(), "round %d losers: got/want", round)
	}
}
