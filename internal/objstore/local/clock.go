package local

import (
	"context"
	"time"
)

// Now reads the store's clock: on a local disk that is the kernel's clock,
// time.Now, which also stamps every file's ctime (and so LastModified, the
// later of mtime and ctime). On a network filesystem the server stamps
// ctime, so its clock, not this host's, is the store's: keep the hosts in
// sync with it (assumption A3 in docs/PROTOCOL.md).
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return time.Now(), nil
}
