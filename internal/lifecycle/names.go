package lifecycle

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key layout of a V1 (directory) database root. One file owns it: every other
// file asks these helpers for keys and never concatenates suffixes itself.
const (
	// TableSuffix ends the directory of a root table: <root>/<name>.lance/.
	TableSuffix = ".lance"
	// MarkerSuffix ends the soft-delete marker: <root>/<name>.deleted.
	MarkerSuffix = ".deleted"
	// LockSuffix ends reaper's lifecycle lease: <root>/<name>.reaper-lock. It
	// has no .lance suffix, so LanceDB does not list it, and it is not a
	// marker. It lives beside the marker so that one listing of the root
	// shows which tables are being purged.
	LockSuffix = ".reaper-lock"
	// CommitSuffix ends the purge commit: <root>/<name>.reaper-purge, written
	// under the lease before a purge's first delete (commit_format.go).
	CommitSuffix = ".reaper-purge"
	// RetainSuffix ends a version-retention record:
	// <root>/<name>.reaper-retain, written under the lease before a
	// retention run's first delete and removed after its last
	// (retain_record.go), so a crash leaves what is left to finish.
	RetainSuffix = ".reaper-retain"
	// PauseKey is the per-root pause switch: while an object of that name,
	// or any object under "_reaper/PAUSE/" (a folder), exists, nothing is
	// purged on the root. An object at pauseDir itself (a file, or on a
	// local disk a symbolic link to a shared switch folder) hides the
	// switch, so it counts as set: the switch fails closed.
	PauseKey = pauseDir + "/PAUSE"
	pauseDir = "_reaper"
	// versionsDir holds a table's manifests; deleting them first makes the
	// table unopenable before anything else goes.
	versionsDir = "_versions"
	// MaxControlBytes caps every read of a marker, a legal hold or a purge
	// commit (docs/FORMAT.md): each is a few hundred bytes at most, so a
	// larger object is not one of them, and reading it whole could cost a
	// container its memory. A marker over the cap is invalid, a hold over
	// it still holds, a commit over it is unreadable: each fails closed for
	// its table alone.
	MaxControlBytes = 16 << 10
)

// ValidateName rejects names that could escape <root>/<name>.lance/ or
// collide with the layout. LanceDB itself allows [a-zA-Z0-9_.-]; reaper is
// more lenient on reading (any name an existing root may hold) but refuses
// names that are not a single path segment.
func ValidateName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty name; pass the table name without the %s suffix", ErrInvalidName, TableSuffix)
	case name == "." || name == "..":
		return fmt.Errorf("%w: %q is not a table name", ErrInvalidName, name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("%w: %q contains '/', '\\' or NUL; a table name is one path segment such as \"my_table\"", ErrInvalidName, name)
	}
	return nil
}

// ValidateNewName is ValidateName for a name reaper is asked to start the
// lifecycle of (drop): it also refuses control characters and bytes that
// are not UTF-8, which no LanceDB client writes (LanceDB allows
// [a-zA-Z0-9_.-]) and which would make every report naming the table
// ambiguous. Such a table, found in a root, is still read, reported
// (quoted) and, once dropped by other means, purged.
func ValidateNewName(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("%w: %q is not UTF-8; rename the table", ErrInvalidName, name)
	}
	if strings.ContainsFunc(name, unicode.IsControl) {
		return fmt.Errorf("%w: %q contains a control character (a newline, a tab, an escape); rename the table", ErrInvalidName, name)
	}
	return nil
}

// TableDir is the key prefix of a table's data, ending in "/".
func TableDir(name string) string { return name + TableSuffix + "/" }

// MarkerKey is the key of a table's soft-delete marker.
func MarkerKey(name string) string { return name + MarkerSuffix }

// LockKey is the key of a table's lifecycle lease.
func LockKey(name string) string { return name + LockSuffix }

// IsLockKey reports whether key is a lifecycle lease; the store stack lets
// their requests bypass the pacer (retry.Options.Unpaced).
func IsLockKey(key string) bool { return strings.HasSuffix(key, LockSuffix) }

// CommitKey is the key of a table's purge commit.
func CommitKey(name string) string { return name + CommitSuffix }

// RetainKey is the key of a table's version-retention record.
func RetainKey(name string) string { return name + RetainSuffix }

// TableDirIn returns the first segment of a slash-separated path that names
// a table directory (<name>.lance), and whether there is one: anything
// stored under it would be deleted with that table.
func TableDirIn(path string) (string, bool) {
	for seg := range strings.SplitSeq(path, "/") {
		if strings.HasSuffix(seg, TableSuffix) {
			return seg, true
		}
	}
	return "", false
}

// tablePath is the key of <name>.lance as an object: where the table's
// directory should be, a symbolic link or a file makes a name that is not a
// table (it is never dropped, purged or entered).
func tablePath(name string) string { return name + TableSuffix }

// entryKind classifies one entry of a root listing.
type entryKind int

const (
	entryOther entryKind = iota
	entryTable
	entryMarker
	entryLock
	entryHold
	entryCommit
	// entryRetain: a retention record (retain_record.go).
	entryRetain
	// entryNotTable: <name>.lance is an object (a symlink or a file on a
	// local disk), not a directory.
	entryNotTable
)

// keySuffix is one kind of key a name has in the root listing.
type keySuffix struct {
	suffix string
	kind   entryKind
}

// objectSuffixes are the root-level objects of a name (<name><suffix>),
// prefixSuffixes its root-level prefixes (<name><suffix>/). Every key a
// name can have in the root listing is one of these: a scan (scan.go)
// knows a name is complete once the listing has passed the greatest
// (lastKey), so a new kind of key is one more entry here, never a spelling
// elsewhere.
var (
	objectSuffixes = []keySuffix{{MarkerSuffix, entryMarker}, {LockSuffix, entryLock}, {HoldSuffix, entryHold}, {CommitSuffix, entryCommit}, {RetainSuffix, entryRetain}, {TableSuffix, entryNotTable}}
	prefixSuffixes = []keySuffix{{HoldSuffix, entryHold}, {TableSuffix, entryTable}}
)

// lastKeySuffix is the greatest of a name's keys less the name:
// ".reaper-retain". Every suffix starts with ".", so all the keys of a name
// lie in [name+".", lastKey(name)].
var lastKeySuffix = func() string {
	last := ""
	for _, s := range objectSuffixes {
		last = max(last, s.suffix)
	}
	for _, s := range prefixSuffixes {
		last = max(last, s.suffix+"/")
	}
	return last
}()

// lastKey is the greatest key name can have in the root listing.
func lastKey(name string) string { return name + lastKeySuffix }

// classifyObject maps a root-level object key to a table name. Only the final
// suffix counts, so "a.deleted.deleted" is the marker of table "a.deleted".
func classifyObject(key string) (string, entryKind) {
	for _, s := range objectSuffixes {
		if name, ok := strings.CutSuffix(key, s.suffix); ok && ValidateName(name) == nil {
			return name, s.kind
		}
	}
	return "", entryOther
}

// classifyPrefix maps a root-level prefix to a table name: "x.lance/" is
// the table's data, "x.reaper-hold/" a legal hold in folder form (mkdir,
// or a console's "Create folder"). "__manifest/" and anything else are not
// tables.
func classifyPrefix(prefix string) (string, entryKind) {
	dir := strings.TrimSuffix(prefix, "/")
	for _, s := range prefixSuffixes {
		if name, ok := strings.CutSuffix(dir, s.suffix); ok && ValidateName(name) == nil {
			return name, s.kind
		}
	}
	return "", entryOther
}

// isManifest reports whether a key relative to the table dir belongs to a
// _versions/ directory (the main one or a branch's under tree/).
func isManifest(rel string) bool {
	dir, _, _ := strings.Cut(rel, "/")
	if dir == versionsDir {
		return true
	}
	return strings.HasPrefix(rel, "tree/") && strings.Contains(rel, "/"+versionsDir+"/")
}
