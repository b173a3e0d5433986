package objstore

// DirectoryScan is implemented by a store whose List reads every entry of
// the directory it lists, whatever the name prefix: a local directory has
// no index by prefix, so a listing of "t." in a root of a million names
// reads a million entries, while an object store answers it from its
// index, a page per request. A caller after a few known keys of such a
// directory reads them by key instead (ScansDirectories).
type DirectoryScan interface {
	ListScansDirectory() bool
}

// ScansDirectories reports whether s, or the first store it wraps
// (through Unwrap() Store) that says, lists by reading whole directories.
func ScansDirectories(s Store) bool {
	for s != nil {
		if d, ok := s.(DirectoryScan); ok {
			return d.ListScansDirectory()
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return false
		}
		s = u.Unwrap()
	}
	return false
}
