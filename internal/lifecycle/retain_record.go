package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lance-reaper/reaper/internal/lance"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/retention"
)

// This file owns the version-retention record <root>/<name>.reaper-retain:
// what a retention run is about to delete from a live table, written under
// the table's lease before its first delete and removed after its last. It
// sits beside the marker, never inside <name>.lance/ (LanceDB lists and
// walks that).
//
// A record left by a run that was cut short is evidence, not an order
// (docs/RETENTION.md, "An interrupted run"): the next run plans the policy
// it is given on the table as it is now, and takes from the record only the
// files that the record's removed versions alone referenced, whose
// manifests are gone by now, and that are still listed exactly as recorded
// (key, size, LastModified). Those no version LanceDB lists can read; left,
// they would wait for unverified_after. Everything else of the record is
// dropped: a version the current policy keeps stays, whatever the record
// says, and a table dropped and created again under the same name (whose
// manifest keys repeat) is a new table the record knows nothing of.

// MaxRetainRecordBytes caps a record's read. A record names each file to
// delete (about 120 bytes each), so 64 MiB holds a plan of over half a
// million files; a larger plan is refused when it is made (docs/FORMAT.md).
const MaxRetainRecordBytes = 64 << 20

// retainRecordFormat is the format this reaper writes: 2 records each
// file's identity (size, LastModified) and whether a removed version
// referenced it. Format 1 (no identity) is still read, and contributes
// nothing but its presence.
const retainRecordFormat = 2

// retainRecord is the record's body. Keys are relative to the table
// directory.
type retainRecord struct {
	Format     int    `json:"format"`
	Owner      string `json:"owner"`
	Generation int64  `json:"generation"`
	CreatedMs  int64  `json:"created_at_ms"`
	CutoffMs   int64  `json:"cutoff_ms"`
	// Versions are the versions whose manifests go, ascending, each with
	// the manifest it names.
	Versions []recordVersion `json:"versions"`
	Files    []recordFile    `json:"files"`
}

// recordVersion is one removed version and its manifest as listed.
type recordVersion struct {
	Version    uint64 `json:"version"`
	Key        string `json:"key"`
	Bytes      int64  `json:"bytes"`
	ModifiedMs int64  `json:"modified_ms,omitempty"`
}

// recordFile is one file to delete. ModifiedMs is its LastModified as
// listed; Verified: a removed version referenced it (a manifest is
// verified too).
type recordFile struct {
	Key        string `json:"key"`
	Bytes      int64  `json:"bytes"`
	ModifiedMs int64  `json:"modified_ms,omitempty"`
	Verified   bool   `json:"verified,omitempty"`
}

// recordV1 is format 1's body: versions as bare numbers, files without
// identity.
type recordV1 struct {
	Owner     string   `json:"owner"`
	CreatedMs int64    `json:"created_at_ms"`
	CutoffMs  int64    `json:"cutoff_ms"`
	Versions  []uint64 `json:"versions"`
	Files     []struct {
		Key   string `json:"key"`
		Bytes int64  `json:"bytes"`
	} `json:"files"`
}

// RecordInfo describes a retention record found beside a table: a run
// interrupted (or one in progress), and what of it is still true.
type RecordInfo struct {
	Owner   string
	Created time.Time
	Cutoff  time.Time
	// Versions and Files are what the record named.
	Versions, Files int
	// StillTrue are its files a run takes on (already in the plan's Files,
	// Why WhyRecorded): the files of versions it removed before it was cut
	// short, still exactly as it recorded them and read by no version.
	StillTrue int
	etag      string
}

// WhyRecorded is why a plan deletes a file it took from a record.
const WhyRecorded = "left by an interrupted run: only versions it removed referenced it"

// newRetainRecord records plan (keys relative to the table directory).
func newRetainRecord(plan retention.Plan, owner string, generation int64, now time.Time) retainRecord {
	r := retainRecord{Format: retainRecordFormat, Owner: owner, Generation: generation, CreatedMs: now.UnixMilli(),
		CutoffMs: plan.Cutoff.UnixMilli()}
	for _, rm := range plan.Removals {
		r.Versions = append(r.Versions, recordVersion{Version: rm.Version, Key: rm.Key, Bytes: rm.Size, ModifiedMs: rm.Modified.UnixMilli()})
	}
	for _, f := range plan.Files {
		r.Files = append(r.Files, recordFile{Key: f.Key, Bytes: f.Bytes, ModifiedMs: f.Modified.UnixMilli(), Verified: f.Verified})
	}
	return r
}

// info summarizes the record.
func (r retainRecord) info(etag string) *RecordInfo {
	return &RecordInfo{Owner: r.Owner, Created: time.UnixMilli(r.CreatedMs).UTC(), Cutoff: time.UnixMilli(r.CutoffMs).UTC(),
		Versions: len(r.Versions), Files: len(r.Files), etag: etag}
}

// stillTrue returns the record's files a run on t takes on: verified files
// (a version the record removed referenced them) still listed with the
// recorded size and LastModified, that no manifest of t (main, detached,
// branches) references — so only versions whose manifests are gone did —
// and that plan does not already delete. A table dropped and created again
// lists none of the old table's files; a version the current policy keeps
// references its own.
func (r retainRecord) stillTrue(t *lance.Table, plan retention.Plan) []retention.File {
	if r.Format < 2 {
		return nil
	}
	objects := make(map[string]objstore.Object, len(t.Objects))
	for _, o := range t.Objects {
		objects[o.Key] = o
	}
	planned := make(map[string]bool, len(plan.Files))
	for _, f := range plan.Files {
		planned[f.Key] = true
	}
	read := referencedByAny(t)
	var out []retention.File
	for _, f := range r.Files {
		o, ok := objects[f.Key]
		switch {
		case !f.Verified, !ok, planned[f.Key], o.Size != f.Bytes, o.LastModified.UnixMilli() != f.ModifiedMs:
			continue
		case strings.HasPrefix(f.Key, lance.VersionsDir):
			continue // a manifest: the plan's to judge
		case read(f.Key):
			continue
		}
		out = append(out, retention.File{Key: f.Key, Bytes: f.Bytes, Why: WhyRecorded, Verified: true, Modified: o.LastModified})
	}
	return out
}

// referencedByAny says whether a manifest of t (every version of main, the
// detached ones, the branches' through base paths) references key, a data,
// deletion, transaction or index file relative to the table directory.
func referencedByAny(t *lance.Table) func(key string) bool {
	keys, indices := map[string]bool{}, map[string]bool{}
	add := func(ks, ixs []string) {
		for _, k := range ks {
			keys[k] = true
		}
		for _, ix := range ixs {
			indices[ix] = true
		}
	}
	for _, vs := range [][]lance.Version{t.Versions, t.Detached} {
		for _, v := range vs {
			add(v.Refs())
		}
	}
	for _, b := range t.Branches {
		for _, v := range b.Versions {
			add(t.MainRefs(v))
		}
	}
	return func(key string) bool {
		if keys[key] {
			return true
		}
		if rest, ok := strings.CutPrefix(key, lance.IndicesDir); ok {
			uuid, _, _ := strings.Cut(rest, "/")
			return indices[uuid]
		}
		return false
	}
}

// withRecord adds a record's still-true files to plan (keys relative to the
// table directory) and returns what it says of the record.
func withRecord(plan *retention.Plan, t *lance.Table, rec *retainRecord, etag string) *RecordInfo {
	info := rec.info(etag)
	extra := rec.stillTrue(t, *plan)
	info.StillTrue = len(extra)
	for _, f := range extra {
		plan.Files = append(plan.Files, f)
		plan.Bytes += f.Bytes
	}
	slices.SortFunc(plan.Files, func(a, b retention.File) int { return strings.Compare(a.Key, b.Key) })
	return info
}

// keys are the record's file keys.
func (r retainRecord) keys() []string {
	ks := make([]string, len(r.Files))
	for i, f := range r.Files {
		ks[i] = f.Key
	}
	return ks
}

// removals are the record's versions as retention.Recheck takes them.
func (r retainRecord) removals() []retention.Removal {
	out := make([]retention.Removal, len(r.Versions))
	for i, v := range r.Versions {
		out[i] = retention.Removal{Version: v.Version, Key: v.Key, Size: v.Bytes}
		if v.ModifiedMs != 0 {
			out[i].Modified = time.UnixMilli(v.ModifiedMs)
		}
	}
	return out
}

// narrow keeps the record's files among keys (Recheck's answer), and the
// versions among versions.
func (r retainRecord) narrow(versions []retention.Removal, keys []string) retainRecord {
	keep := make(map[string]bool, len(keys))
	for _, k := range keys {
		keep[k] = true
	}
	out := r
	out.Versions, out.Files = nil, nil
	for _, v := range versions {
		out.Versions = append(out.Versions, recordVersion{Version: v.Version, Key: v.Key, Bytes: v.Size, ModifiedMs: v.Modified.UnixMilli()})
	}
	for _, f := range r.Files {
		if keep[f.Key] {
			out.Files = append(out.Files, f)
		}
	}
	return out
}

// writeRetainRecord writes the record: create-if-absent, or over the
// record found (etag), compare-and-swap; ctx is the lease's fenced context.
func (ns *Namespace) writeRetainRecord(ctx context.Context, name string, r retainRecord, etag string) (objstore.Object, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return objstore.Object{}, err
	}
	if len(body) > MaxRetainRecordBytes {
		return objstore.Object{}, fmt.Errorf("retain %q: a plan of %d files is more than one record holds (%d bytes): set a later older_than or fewer versions and run again", name, len(r.Files), MaxRetainRecordBytes)
	}
	var obj objstore.Object
	if etag == "" {
		obj, err = ns.store.PutIfAbsent(ctx, RetainKey(name), body)
	} else {
		obj, err = ns.store.PutIfMatch(ctx, RetainKey(name), body, etag)
	}
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
	r, err := parseRetainRecord(body)
	if err != nil {
		return nil, obj, fmt.Errorf("retention record %s %w: inspect it; while it exists the table's retention does not run", RetainKey(name), err)
	}
	return r, obj, nil
}

// parseRetainRecord reads either format.
func parseRetainRecord(body []byte) (*retainRecord, error) {
	var head struct {
		Format int `json:"format"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return nil, fmt.Errorf("does not parse (%v)", err)
	}
	switch head.Format {
	case 1:
		var v1 recordV1
		if err := json.Unmarshal(body, &v1); err != nil {
			return nil, fmt.Errorf("does not parse (format 1: %v)", err)
		}
		r := &retainRecord{Format: 1, Owner: v1.Owner, CreatedMs: v1.CreatedMs, CutoffMs: v1.CutoffMs}
		for _, n := range v1.Versions {
			r.Versions = append(r.Versions, recordVersion{Version: n})
		}
		for _, f := range v1.Files {
			r.Files = append(r.Files, recordFile{Key: f.Key, Bytes: f.Bytes})
		}
		return r, nil
	case retainRecordFormat:
		var r retainRecord
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, fmt.Errorf("does not parse (format %d: %v)", head.Format, err)
		}
		return &r, nil
	}
	return nil, fmt.Errorf("has format %d, which this reaper does not know (a newer reaper wrote it?)", head.Format)
}
