package lifecycle

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key layout of a database root. One file owns it: every other file asks
// these helpers for keys and never concatenates suffixes itself. A root
// holds root tables (<name>.lance/, V1 of LanceDB's directory namespace)
// and, once LanceDB has made a namespace, tables of the manifest layout
// (V2: <hash>_<object id>/, registered in the catalog __manifest/); see
// "Tables in namespaces" below.
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
// names that are not a single path segment. A namespaced table's name (its
// directory, "76cba2fc_tenant_a$inner/") is valid too.
func ValidateName(name string) error {
	if IsNamespaced(name) {
		return nil
	}
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
	if err := RootTableOnly("drop", name); err != nil {
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

// TableDir is the key prefix of a table's data, ending in "/": a root
// table's <name>.lance/, a namespaced table's name itself.
func TableDir(name string) string {
	if IsNamespaced(name) {
		return name
	}
	return name + TableSuffix + "/"
}

// MarkerKey is the key of a table's soft-delete marker.
func MarkerKey(name string) string { return controlStem(name) + MarkerSuffix }

// LockKey is the key of a table's lifecycle lease.
func LockKey(name string) string { return controlStem(name) + LockSuffix }

// IsLockKey reports whether key is a lifecycle lease; the store stack lets
// their requests bypass the pacer (retry.Options.Unpaced).
func IsLockKey(key string) bool { return strings.HasSuffix(key, LockSuffix) }

// CommitKey is the key of a table's purge commit.
func CommitKey(name string) string { return controlStem(name) + CommitSuffix }

// RetainKey is the key of a table's version-retention record.
func RetainKey(name string) string { return controlStem(name) + RetainSuffix }

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

// tablePath is the key of the table's directory as an object (<name>.lance,
// or a namespaced table's directory without its "/"): where the table's
// directory should be, a symbolic link or a file makes a name that is not a
// table (it is never dropped, purged or entered).
func tablePath(name string) string { return strings.TrimSuffix(TableDir(name), "/") }

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
	// entryNamespaced: <name>/ where name is a manifest-layout directory
	// (<8 hex>_<object id>): a namespaced table if its content says so.
	entryNamespaced
	// entryCatalog: __manifest/, the namespace catalog.
	entryCatalog
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

// lastKeySuffix is the greatest of a name's control keys less the name:
// ".reaper-retain". Every suffix starts with ".", so all the keys of a root
// table lie in [name+".", lastKey(name)].
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

// lastControlKey is the greatest key of name's control objects (its
// marker, lease, hold, commit and record).
func lastControlKey(name string) string { return controlStem(name) + lastKeySuffix }

// lastKey is the greatest key the name (a stem of the listing: a root
// table's name, a namespaced table's directory without "/") can have in the
// root listing: its control keys, and after them, for a stem that can be a
// manifest-layout directory or the catalog, that directory ("/" sorts after
// ".").
func lastKey(stem string) string {
	if _, ok := namespacedStem(stem); ok || stem == CatalogDir {
		return stem + "/"
	}
	return stem + lastKeySuffix
}

// classifyObject maps a root-level object key to a table name. Only the final
// suffix counts, so "a.deleted.deleted" is the marker of table "a.deleted".
func classifyObject(key string) (string, entryKind) {
	for _, s := range objectSuffixes {
		if name, ok := strings.CutSuffix(key, s.suffix); ok && rootName(name) {
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
		if name, ok := strings.CutSuffix(dir, s.suffix); ok && rootName(name) {
			return name, s.kind
		}
	}
	return "", entryOther
}

// rootName reports whether name is a valid root table's name (one path
// segment).
func rootName(name string) bool { return !IsNamespaced(name) && ValidateName(name) == nil }

// classifyRootPrefix is classifyPrefix for a root listing, which also
// sees the manifest layout: "<8 hex>_<object id>/" (entryNamespaced) and
// "__manifest/" (entryCatalog), each by its stem.
func classifyRootPrefix(prefix string) (string, entryKind) {
	if name, kind := classifyPrefix(prefix); kind != entryOther {
		return name, kind
	}
	dir := strings.TrimSuffix(prefix, "/")
	switch _, ok := namespacedStem(dir); {
	case ok:
		return dir, entryNamespaced
	case dir == CatalogDir:
		return dir, entryCatalog
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

// Tables in namespaces. LanceDB's directory namespace keeps a table of a
// child namespace (and a root table once renamed) in the manifest layout
// (lance-namespace docs/src/dir/catalog-spec.md, V2): its directory is
// <root>/<hash>_<object id>/, the hash 8 lowercase hex digits drawn at
// random when the table is created, the object id the namespace path and
// the table name joined by "$" ("tenant_a$inner"), and the table is
// registered in the catalog <root>/__manifest/, a Lance table. reaper does
// not read the catalog: a table of this layout is found by its directory
// in the root's one listing, and its content decides whether it is a table
// (a _versions/ holding manifests: never the name alone).
//
// Inside reaper such a table is named by its directory, "/" included
// ("76cba2fc_tenant_a$inner/"): the name determines every key, as a root
// table's does. TableDir is the name itself; its control objects (lease,
// legal hold, retention record) sit beside the directory at the root,
// "76cba2fc_tenant_a$inner.reaper-lock", never inside it, where LanceDB
// owns every key. People see the object id (ObjectID). A root table whose
// name is a manifest directory's stem would share those keys: such a pair
// is a clash, and the namespaced one is left alone (scan.go).
const (
	// CatalogDir is the namespace catalog, a Lance table LanceDB commits
	// every namespace operation to: never a table reaper cleans.
	CatalogDir = "__manifest"
	// ObjectIDSep joins a namespace path and a table name (LanceDB's
	// DELIMITER); LanceDB refuses it in names.
	ObjectIDSep = "$"
	// DeregisteredFile, inside a table's directory, marks a table
	// deregistered (hidden from LanceDB's listings, its data kept for
	// re-registration): reported, never cleaned.
	DeregisteredFile = ".lance-deregistered"
	// ReservedFile, inside a table's directory, marks its location
	// reserved; LanceDB 0.39 leaves it in a created table's directory too,
	// so the versions decide.
	ReservedFile = ".lance-reserved"
	// nsHashDigits is the length of the directory's hash prefix.
	nsHashDigits = 8
)

// namespacedStem returns the object id of a manifest-layout directory's
// name without "/" ("76cba2fc_tenant_a$inner" -> "tenant_a$inner"), and
// whether it is one: 8 lowercase hex digits, "_", and a non-empty object id
// that is one path segment.
func namespacedStem(stem string) (string, bool) {
	if len(stem) <= nsHashDigits+1 || stem[nsHashDigits] != '_' {
		return "", false
	}
	for _, c := range []byte(stem[:nsHashDigits]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "", false
		}
	}
	id := stem[nsHashDigits+1:]
	if strings.ContainsAny(id, "/\\\x00") {
		return "", false
	}
	return id, true
}

// IsNamespaced reports whether name is a table of the manifest layout:
// its directory, ending in "/".
func IsNamespaced(name string) bool {
	stem, ok := strings.CutSuffix(name, "/")
	if !ok {
		return false
	}
	_, ok = namespacedStem(stem)
	return ok
}

// controlStem is what a table's control keys start with: a root table's
// name, a namespaced table's directory without "/".
func controlStem(name string) string {
	if IsNamespaced(name) {
		return strings.TrimSuffix(name, "/")
	}
	return name
}

// NameOfDir is the name of the table whose directory, at the top of the
// root and without "/", is dir: "t.lance" is t, "76cba2fc_tenant_a$inner"
// is "76cba2fc_tenant_a$inner/".
func NameOfDir(dir string) (string, bool) {
	if name, ok := strings.CutSuffix(dir, TableSuffix); ok && rootName(name) {
		return name, true
	}
	if _, ok := namespacedStem(dir); ok {
		return NamespacedName(dir), true
	}
	return "", false
}

// NamespacedName is the name of the table whose directory stem is given
// (without "/").
func NamespacedName(stem string) string { return stem + "/" }

// ObjectID is the name a LanceDB user knows the table by: a namespaced
// table's object id ("tenant_a$inner"), a root table's name.
func ObjectID(name string) string {
	if stem, ok := strings.CutSuffix(name, "/"); ok {
		if id, ok := namespacedStem(stem); ok {
			return id
		}
	}
	return name
}

// SplitObjectID splits an object id into its namespace path and the table
// name: "tenant_a$sub$deep" is ["tenant_a", "sub"] and "deep"; a root
// table has no namespace.
func SplitObjectID(id string) (namespace []string, table string) {
	parts := strings.Split(id, ObjectIDSep)
	return parts[:len(parts)-1], parts[len(parts)-1]
}

// JoinObjectID is the object id of table in namespace.
func JoinObjectID(namespace []string, table string) string {
	return strings.Join(append(slices.Clone(namespace), table), ObjectIDSep)
}

// IsObjectID reports whether a name a caller gave is a namespaced table's
// object id ("tenant_a$inner"): LanceDB refuses "$" in names, so a name
// with one names a table in a namespace, never a root table.
func IsObjectID(name string) bool {
	return strings.Contains(name, ObjectIDSep) && !strings.ContainsAny(name, "/\\\x00")
}

// ErrNamespaced: drop, revive and purge are root-table operations.
var ErrNamespaced = errors.New("a table in a namespace")

// RootTableOnly refuses a namespaced table (by its directory or its object
// id) for op, a root-table operation: LanceDB's soft delete (the markers
// reaper drops and purges by) is V1-only, so a marker beside a namespaced
// table would hide nothing from LanceDB, and its drop is LanceDB's
// (dropTable with the namespace), which deletes the directory and the
// catalog's row together.
func RootTableOnly(op, name string) error {
	if !IsNamespaced(name) && !IsObjectID(name) {
		return nil
	}
	return fmt.Errorf("%s %q: %w: drop, revive and purge are for root tables (<name>%s); Lance's soft delete is V1-only (lance PR #7541), so drop it with LanceDB's dropTable and its namespace",
		op, ObjectID(name), ErrNamespaced, TableSuffix)
}
