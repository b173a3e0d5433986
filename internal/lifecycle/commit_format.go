package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// This file owns the purge commit <root>/<name>.reaper-purge: a purge writes
// it, create-if-absent and fenced, under the lease and immediately before
// its first delete. From then on the table can only be finished: revive
// refuses it, status shows it partially purged, and any later pass finishes
// it whatever the TTL. It names the marker it was committed against by that
// marker's bytes, so a table revived and dropped again behind reaper's back
// (a new marker) is never finished early under an old commit. Lance never
// reads it: the marker's bytes stay as Lance wrote them.

// ErrPartiallyPurged: a purge committed and started deleting the table; it
// cannot be revived, only purged to the end.
var ErrPartiallyPurged = errors.New("partially purged: cannot revive")

// Commit is the body of a purge commit.
type Commit struct {
	// Owner and Generation name the purge (its lease) that committed.
	Owner      string `json:"owner"`
	Generation int64  `json:"generation"`
	// CommittedAtMs is the store's clock when the purge committed.
	CommittedAtMs int64 `json:"committed_at_ms"`
	// Marker is the committed marker's body, verbatim.
	Marker string `json:"marker"`
	// Stuck, when set, is why a purge under this commit could not finish
	// and what a person must do (purge_stuck.go), StuckAtMs when it was
	// recorded; status shows the table as stuck. The next purge tries
	// again regardless.
	Stuck     string `json:"stuck,omitempty"`
	StuckAtMs int64  `json:"stuck_at_ms,omitempty"`
}

// Matches reports whether the commit was made against this marker body.
func (c Commit) Matches(marker []byte) bool { return bytes.Equal([]byte(c.Marker), marker) }

// encodeCommit renders a commit as compact JSON.
func encodeCommit(c Commit) []byte {
	b, _ := json.Marshal(c) // strings and integers only: cannot fail
	return b
}

// parseCommit reads a commit. A body that does not parse is still a commit
// (fail closed): it matches no marker, so a purge treats it as stale only
// after an operator looks; status reports it.
func parseCommit(body []byte) (Commit, error) {
	var c Commit
	if err := json.Unmarshal(body, &c); err != nil {
		return Commit{}, fmt.Errorf("parse purge commit: %w", err)
	}
	return c, nil
}

// readCommit returns the table's commit and its object, or nil without one.
func (ns *Namespace) readCommit(ctx context.Context, name string) (*Commit, objstore.Object, error) {
	body, obj, err := ns.store.Get(ctx, CommitKey(name), MaxControlBytes)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, objstore.Object{}, nil
	}
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("read purge commit %s: %w", CommitKey(name), err)
	}
	c, err := parseCommit(body)
	if err != nil {
		return nil, obj, fmt.Errorf("%s: %w; inspect it: while it exists the table is never revived", CommitKey(name), err)
	}
	return &c, obj, nil
}

// writeCommit records, under the lease (ctx is its fenced context), that the
// table committed against marker is being purged.
func (ns *Namespace) writeCommit(ctx context.Context, name string, marker []byte, owner string, generation int64) (objstore.Object, error) {
	now, err := ns.storeNow(ctx)
	if err != nil {
		return objstore.Object{}, err
	}
	c := Commit{Owner: owner, Generation: generation, CommittedAtMs: now.UnixMilli(), Marker: string(marker)}
	obj, err := ns.store.PutIfAbsent(ctx, CommitKey(name), encodeCommit(c))
	if err != nil {
		return objstore.Object{}, fmt.Errorf("write purge commit %s: %w", CommitKey(name), err)
	}
	return obj, nil
}

// committedAt is the commit's time, for messages.
func (c Commit) committedAt() time.Time { return time.UnixMilli(c.CommittedAtMs) }
