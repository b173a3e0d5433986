package lance

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The directories of a table that Lance's cleanup manages, relative to the
// table directory. Files anywhere else (_refs/, tree/, _fri/, the root of
// the table) are never planned for deletion.
const (
	VersionsDir     = "_versions/"
	TransactionsDir = "_transactions/"
	DataDir         = "data/"
	IndicesDir      = "_indices/"
	DeletionsDir    = "_deletions/"
	// BlobsDir holds managed blob files; the reader refuses a table that has
	// any (it cannot tell from manifests alone which are referenced).
	BlobsDir    = "_blobs/"
	tagsDir     = "_refs/tags/"
	branchesDir = "_refs/branches/"
	// treeDir holds each branch's own dataset: tree/<branch>/.
	treeDir = "tree/"
)

// File extensions, without the dot, as Lance's cleanup matches them.
const (
	extData        = "lance"
	extManifest    = "manifest"
	extTransaction = "txn"
	extDeletionArr = "arrow"
	extDeletionBin = "bin"
)

// versionHintName is Lance's latest-version hint in _versions/: JSON, not a
// version.
const versionHintName = "latest_version_hint.json"

// tempPrefix starts the name, relative to _versions/, of everything Lance's
// cleanup takes for a temporary manifest: a file .tmp*, or any file in a
// directory .tmp* (Lance matches the path prefix "_versions/.tmp").
const tempPrefix = ".tmp"

// v2NameLen is the length of a V2 manifest name: 20 digits, ".manifest".
const v2NameLen = 20 + 1 + len(extManifest)

// nameKind is what a file directly under _versions/ is.
type nameKind int

const (
	nameUnknown  nameKind = iota
	nameVersion           // an attached version's manifest (V1 or V2 naming)
	nameDetached          // d{n}.manifest: a detached version
	nameHint              // latest_version_hint.json
	nameTemp              // .tmp*: a manifest being written (or abandoned)
	nameStaging           // {manifest name}-{uuid}: a staged commit
)

// Scheme is a manifest naming scheme.
type Scheme int

const (
	// SchemeV1 names version n "{n}.manifest".
	SchemeV1 Scheme = 1
	// SchemeV2 names version n "{u64::MAX - n, 20 digits}.manifest", so the
	// newest sorts first.
	SchemeV2 Scheme = 2
)

// stagedUpload reports whether name is a file the object_store crate is
// writing on a local file system: it writes <name>#<n> and renames it to
// <name> when the upload completes, so a writer's manifest in flight is
// listed under that name (and stays so after a crash). It is not a
// version; the name it will have is read once it is renamed.
func stagedUpload(name string) bool {
	i := strings.LastIndexByte(name, '#')
	return i > 0 && i < len(name)-1 && allDigits(name[i+1:])
}

// versionName classifies a file name directly under _versions/ and, for a
// version or a detached version, returns its number and naming scheme.
func versionName(name string) (nameKind, uint64, Scheme) {
	switch {
	case name == versionHintName:
		return nameHint, 0, 0
	case strings.HasPrefix(name, tempPrefix):
		return nameTemp, 0, 0
	case stagedUpload(name):
		return nameTemp, 0, 0
	}
	stem, ext, ok := strings.Cut(name, ".")
	if !ok {
		return nameUnknown, 0, 0
	}
	if ext != extManifest {
		if strings.HasPrefix(ext, extManifest+"-") && allDigits(stem) {
			return nameStaging, 0, 0
		}
		return nameUnknown, 0, 0
	}
	if d, found := strings.CutPrefix(stem, "d"); found {
		n, err := strconv.ParseUint(d, 10, 64)
		if err != nil || !allDigits(d) {
			return nameUnknown, 0, 0
		}
		return nameDetached, n, SchemeV2
	}
	if !allDigits(stem) {
		return nameUnknown, 0, 0
	}
	n, err := strconv.ParseUint(stem, 10, 64)
	if err != nil {
		return nameUnknown, 0, 0
	}
	if len(name) == v2NameLen {
		return nameVersion, math.MaxUint64 - n, SchemeV2
	}
	return nameVersion, n, SchemeV1
}

// ManifestName is the name of version n's manifest in scheme s.
func ManifestName(s Scheme, n uint64) string {
	if s == SchemeV2 {
		return fmt.Sprintf("%020d.%s", uint64(math.MaxUint64)-n, extManifest)
	}
	return fmt.Sprintf("%d.%s", n, extManifest)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// ext is a key's extension as Lance's cleanup reads it: what follows the
// last "." of the last segment ("" without one).
func ext(key string) string {
	base := key[strings.LastIndexByte(key, '/')+1:]
	if i := strings.LastIndexByte(base, '.'); i >= 0 {
		return base[i+1:]
	}
	return ""
}

// DeletionFileKey is the key, relative to the table directory, of a
// fragment's deletion file: _deletions/{fragment}-{read_version}-{id}.{ext},
// arrow for an ARROW_ARRAY file (type 0) and bin for a BITMAP (type 1).
func DeletionFileKey(fragment, readVersion, id uint64, bitmap bool) string {
	e := extDeletionArr
	if bitmap {
		e = extDeletionBin
	}
	// Built by hand: every version names every fragment's deletion file,
	// and Sprintf here was a sixth of reading a long history.
	b := make([]byte, 0, len(DeletionsDir)+3*20+3+len(e))
	b = append(b, DeletionsDir...)
	b = strconv.AppendUint(b, fragment, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, readVersion, 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, id, 10)
	b = append(b, '.')
	b = append(b, e...)
	return string(b)
}

// ManifestVersion is the version an attached manifest's file name (in
// _versions/, either naming scheme) names, and whether it names one.
func ManifestVersion(name string) (uint64, bool) {
	kind, n, _ := versionName(name)
	return n, kind == nameVersion
}
