package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/retention"
)

// This file owns the version-retention record <root>/<name>.reaper-retain:
// what a retention run is about to delete from a live table, written
// create-if-absent under the table's lease before its first delete and
// removed after its last. A run killed in between leaves it, and the next
// run under the lease finishes exactly that plan, narrowed to what the
// table still allows (retention.Recheck): nothing a removed version alone
// referenced is left behind, whatever the age of the files. It sits beside
// the marker, never inside <name>.lance/ (LanceDB lists and walks that).

// MaxRetainRecordBytes caps a record's read. A record names each file to
// delete (about 100 bytes each), so 64 MiB holds a plan of over half a
// million files; a larger plan is refused when it is made (docs/FORMAT.md).
const MaxRetainRecordBytes = 64 << 20

// retainRecord is the record's body. Keys are relative to the table
// directory.
type retainRecord struct {
	Format     int    `json:"format"`
	Owner      string `json:"owner"`
	Generation int64  `json:"generation"`
	CreatedMs  int64  `json:"created_at_ms"`
	CutoffMs   int64  `json:"cutoff_ms"`
	// Versions are the versions whose manifests go, ascending.
	Versions []uint64     `json:"versions"`
	Files    []recordFile `json:"files"`
}

type recordFile struct {
	Key   string `json:"key"`
	Bytes int64  `json:"bytes"`
}

const retainRecordFormat = 1

// newRetainRecord records plan.
func newRetainRecord(plan retention.Plan, owner string, generation int64, now time.Time) retainRecord {
	r := retainRecord{Format: retainRecordFormat, Owner: owner, Generation: generation, CreatedMs: now.UnixMilli(),
		CutoffMs: plan.Cutoff.UnixMilli(), Versions: plan.Removed}
	for _, f := range plan.Files {
		r.Files = append(r.Files, recordFile{Key: f.Key, Bytes: f.Bytes})
	}
	return r
}

// keys are the record's file keys.
func (r retainRecord) keys() []string {
	ks := make([]string, len(r.Files))
	for i, f := range r.Files {
		ks[i] = f.Key
	}
	return ks
}

// narrow keeps the record's files among keys (Recheck's answer), and the
// versions among versions.
func (r retainRecord) narrow(versions []uint64, keys []string) retainRecord {
	keep := make(map[string]bool, len(keys))
	for _, k := range keys {
		keep[k] = true
	}
	out := r
	out.Versions, out.Files = versions, nil
	for _, f := range r.Files {
		if keep[f.Key] {
			out.Files = append(out.Files, f)
		}
	}
	return out
}

// writeRetainRecord writes the record create-if-absent; ctx is the lease's
// fenced context.
func (ns *Namespace) writeRetainRecord(ctx context.Context, name string, r retainRecord) (objstore.Object, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return objstore.Object{}, err
	}
	if len(body) > MaxRetainRecordBytes {
		return objstore.Object{}, fmt.Errorf("retain %q: a plan of %d files is more than one record holds (%d bytes): set a later older_than or fewer versions and run again", name, len(r.Files), MaxRetainRecordBytes)
	}
	obj, err := ns.store.PutIfAbsent(ctx, RetainKey(name), body)
	if err != nil {
		return objstore.Object{}, fmt.Errorf("write retention record %s: %w", RetainKey(name), err)
	}
	return obj, nil
}

// readRetainRecord returns the table's record and its object, or nil
// without one. A record that cannot be read or parsed is an error: the
// table is not cleaned until an operator looks (fail closed).
func (ns *Namespace) readRetainRecord(ctx context.Context, name string) (*retainRecord, objstore.Object, error) {
	body, obj, err := ns.store.Get(ctx, RetainKey(name), MaxRetainRecordBytes)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, objstore.Object{}, nil
	}
	if err != nil {
		return nil, objstore.Object{}, fmt.Errorf("read retention record %s: %w", RetainKey(name), err)
	}
	var r retainRecord
	if err := json.Unmarshal(body, &r); err != nil || r.Format != retainRecordFormat {
		return nil, obj, fmt.Errorf("retention record %s does not parse (format %d, %v): inspect it; while it exists the table's retention does not run", RetainKey(name), r.Format, err)
	}
	return &r, obj, nil
}
