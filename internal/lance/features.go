package lance

import "fmt"

// Feature flags of Manifest.reader_feature_flags and writer_feature_flags
// (lance protos/table.proto). A reader must refuse a table with a bit it
// does not know; writers likewise.
const (
	FlagDeletionFiles       uint64 = 1 << 0
	FlagStableRowIDs        uint64 = 1 << 1
	FlagV2Format            uint64 = 1 << 2 // deprecated
	FlagTableConfig         uint64 = 1 << 3
	FlagMultipleBasePaths   uint64 = 1 << 4
	FlagNoTransactionFile   uint64 = 1 << 5
	FlagDataOverlays        uint64 = 1 << 6
	FlagCoveringIndexFields uint64 = 1 << 7
)

// knownFlags are the bits this reader understands. Bit 8 (per-file exact
// V2 versions) is reserved upstream with "treat as unknown unless
// supported": it is unknown here.
const knownFlags = FlagDeletionFiles | FlagStableRowIDs | FlagV2Format | FlagTableConfig |
	FlagMultipleBasePaths | FlagNoTransactionFile | FlagDataOverlays | FlagCoveringIndexFields

// checkFlags refuses a manifest with a feature bit the reader does not know.
// Lance's own cleanup does not check them (the LanceDB 0.39 client cleaned
// a table whose newest manifest had an unknown writer bit): reaper is
// stricter, because a feature it does not know may reference files it
// would not keep.
func checkFlags(m Manifest) error {
	if u := m.ReaderFlags &^ knownFlags; u != 0 {
		return fmt.Errorf("unknown reader feature flag(s) %#x (flags %#x)", u, m.ReaderFlags)
	}
	if u := m.WriterFlags &^ knownFlags; u != 0 {
		return fmt.Errorf("unknown writer feature flag(s) %#x (flags %#x)", u, m.WriterFlags)
	}
	return nil
}
