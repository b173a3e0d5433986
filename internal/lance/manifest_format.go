package lance

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// A manifest file ends with a 16-byte footer: i64 LE position of the
// Manifest message | u16 LE major | u16 LE minor | "LANC". At the position:
// u32 LE length | Manifest protobuf, ending exactly where the footer starts.
// The manifest's index_section (field 6) is the position, in the same file,
// of u32 LE length | IndexSection protobuf. Field numbers are those of
// lance's protos/table.proto.
const (
	footerLen    = 16
	footerMagic  = "LANC"
	footerMajor  = 0
	footerMinor  = 2
	lengthPrefix = 4
)

// Manifest is what the reader keeps of one version's manifest: the fields
// that decide what it references and when it was written.
type Manifest struct {
	Version uint64
	// Timestamp is the version's creation time by the writer's clock
	// (field 7), the time Lance's cleanup compares with its cutoff.
	Timestamp       time.Time
	ReaderFlags     uint64
	WriterFlags     uint64
	TransactionFile string // relative to _transactions/; "" when none
	// Branch is the branch the version belongs to; "" for main.
	Branch    string
	Fragments []Fragment
	BasePaths []BasePath
	Indices   []Index
}

// Fragment is one DataFragment.
type Fragment struct {
	ID       uint64
	Files    []DataFile
	Overlays []DataFile
	Deletion *DeletionFile
	// External are the files of row ids and row versions stored outside
	// the manifest (ExternalFile paths, relative to the table).
	External []string
}

// DataFile is a data file: Path is relative to the data directory of the
// table, or of base path BaseID when HasBase.
type DataFile struct {
	Path    string
	BaseID  uint32
	HasBase bool
}

// DeletionFile names a fragment's deletion file.
type DeletionFile struct {
	Bitmap      bool // BITMAP (.bin); otherwise ARROW_ARRAY (.arrow)
	ReadVersion uint64
	ID          uint64
	BaseID      uint32
	HasBase     bool
}

// BasePath is a Manifest.base_paths entry: another location files may live
// in (shallow clones, branches, imported files).
type BasePath struct {
	ID            uint32
	Name          string
	IsDatasetRoot bool
	Path          string
}

// Index is one IndexMetadata of the index section.
type Index struct {
	UUID    string // hyphenated, as the _indices/<uuid>/ directory is named
	Name    string
	BaseID  uint32
	HasBase bool
}

// Known field numbers of the messages that reference files. A field the
// reader does not know in one of them may reference a file it would not
// keep: the manifest is refused.
var (
	knownManifest = numbers(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21)
	knownFragment = numbers(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
	knownDataFile = numbers(1, 2, 3, 4, 5, 6, 7)
	knownOverlay  = numbers(1, 2, 3, 4)
	knownDeletion = numbers(1, 2, 3, 4, 7)
	knownExternal = numbers(1, 2, 3)
	knownBasePath = numbers(1, 2, 3, 4)
	knownIndex    = numbers(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
)

func numbers(n ...protowire.Number) map[protowire.Number]bool {
	m := make(map[protowire.Number]bool, len(n))
	for _, x := range n {
		m[x] = true
	}
	return m
}

// DecodeManifestFile decodes a whole manifest file: footer, Manifest and
// index section. Any deviation from the layout is an error.
func DecodeManifestFile(file []byte) (Manifest, error) {
	msg, err := manifestMessage(file)
	if err != nil {
		return Manifest{}, err
	}
	m, section, hasSection, err := decodeManifest(msg)
	if err != nil {
		return Manifest{}, err
	}
	if hasSection {
		sec, err := lengthPrefixed(file, section, "index section")
		if err != nil {
			return Manifest{}, err
		}
		if m.Indices, err = decodeIndexSection(sec); err != nil {
			return Manifest{}, fmt.Errorf("index section: %w", err)
		}
	}
	return m, nil
}

// manifestMessage returns the Manifest protobuf bytes of a manifest file.
func manifestMessage(file []byte) ([]byte, error) {
	if len(file) < footerLen+lengthPrefix {
		return nil, fmt.Errorf("%d bytes: shorter than the 16-byte footer and a length", len(file))
	}
	foot := file[len(file)-footerLen:]
	if string(foot[12:]) != footerMagic {
		return nil, fmt.Errorf("footer magic %q, want %q", foot[12:], footerMagic)
	}
	major, minor := binary.LittleEndian.Uint16(foot[8:10]), binary.LittleEndian.Uint16(foot[10:12])
	if major != footerMajor || minor != footerMinor {
		return nil, fmt.Errorf("footer version %d.%d, want %d.%d", major, minor, footerMajor, footerMinor)
	}
	pos := int64(binary.LittleEndian.Uint64(foot[:8]))
	end := int64(len(file) - footerLen)
	if pos < 0 || pos+lengthPrefix > end {
		return nil, fmt.Errorf("manifest position %d outside the file's %d bytes", pos, len(file))
	}
	n := int64(binary.LittleEndian.Uint32(file[pos:]))
	if pos+lengthPrefix+n != end {
		return nil, fmt.Errorf("manifest at %d is %d bytes long, but the footer starts %d bytes after it", pos, n, end-pos-lengthPrefix)
	}
	return file[pos+lengthPrefix : end], nil
}

// lengthPrefixed returns the message at pos: u32 LE length, then the bytes.
func lengthPrefixed(file []byte, pos uint64, what string) ([]byte, error) {
	end := uint64(len(file) - footerLen)
	if pos > end || end-pos < lengthPrefix {
		return nil, fmt.Errorf("%s position %d outside the file", what, pos)
	}
	n := uint64(binary.LittleEndian.Uint32(file[pos:]))
	if n > end-pos-lengthPrefix {
		return nil, fmt.Errorf("%s at %d is %d bytes long, past the footer", what, pos, n)
	}
	return file[pos+lengthPrefix : pos+lengthPrefix+n], nil
}

func unknownField(msg string, known map[protowire.Number]bool, f field) error {
	if known[f.num] {
		return nil
	}
	return fmt.Errorf("%s has field %d, unknown to this reader (written by a newer Lance?)", msg, f.num)
}

// decodeManifest decodes the Manifest message and returns the position of
// its index section, if any.
func decodeManifest(msg []byte) (Manifest, uint64, bool, error) {
	var m Manifest
	var section uint64
	var hasSection bool
	err := eachField(msg, func(f field) error {
		if err := unknownField("Manifest", knownManifest, f); err != nil {
			return err
		}
		var err error
		switch f.num {
		case 1:
			err = checkSchemaField(f)
		case 2:
			var fr Fragment
			if err = f.want(protowire.BytesType, "Manifest"); err == nil {
				fr, err = decodeFragment(f.b)
				m.Fragments = append(m.Fragments, fr)
			}
		case 3:
			err = f.want(protowire.VarintType, "Manifest")
			m.Version = f.u
		case 6:
			err = f.want(protowire.VarintType, "Manifest")
			section, hasSection = f.u, true
		case 7:
			if err = f.want(protowire.BytesType, "Manifest"); err == nil {
				m.Timestamp, err = decodeTimestamp(f.b)
			}
		case 9:
			err = f.want(protowire.VarintType, "Manifest")
			m.ReaderFlags = f.u
		case 10:
			err = f.want(protowire.VarintType, "Manifest")
			m.WriterFlags = f.u
		case 12:
			err = f.want(protowire.BytesType, "Manifest")
			m.TransactionFile = string(f.b)
		case 17:
		case 18:
			var bp BasePath
			if err = f.want(protowire.BytesType, "Manifest"); err == nil {
				bp, err = decodeBasePath(f.b)
				m.BasePaths = append(m.BasePaths, bp)
			}
		case 20:
			err = f.want(protowire.BytesType, "Manifest")
			m.Branch = string(f.b)
		}
		return err
	})
	return m, section, hasSection, err
}

func decodeTimestamp(b []byte) (time.Time, error) {
	var sec, nsec int64
	err := eachField(b, func(f field) error {
		switch f.num {
		case 1:
			sec = int64(f.u)
		case 2:
			nsec = int64(int32(f.u))
		}
		return f.want(protowire.VarintType, "Timestamp")
	})
	return time.Unix(sec, nsec).UTC(), err
}

func decodeFragment(b []byte) (Fragment, error) {
	var fr Fragment
	err := eachField(b, func(f field) error {
		if err := unknownField("DataFragment", knownFragment, f); err != nil {
			return err
		}
		var err error
		switch f.num {
		case 1:
			err = f.want(protowire.VarintType, "DataFragment")
			fr.ID = f.u
		case 2, 11:
			if err = f.want(protowire.BytesType, "DataFragment"); err != nil {
				return err
			}
			var df DataFile
			if f.num == 2 {
				df, err = decodeDataFile(f.b)
				fr.Files = append(fr.Files, df)
			} else {
				df, err = decodeOverlay(f.b)
				fr.Overlays = append(fr.Overlays, df)
			}
		case 3:
			var d DeletionFile
			if err = f.want(protowire.BytesType, "DataFragment"); err == nil {
				d, err = decodeDeletion(f.b)
				fr.Deletion = &d
			}
		case 6, 8, 10:
			var p string
			if err = f.want(protowire.BytesType, "DataFragment"); err == nil {
				p, err = decodeExternal(f.b)
				fr.External = append(fr.External, p)
			}
		}
		return err
	})
	return fr, err
}

func decodeDataFile(b []byte) (DataFile, error) {
	var df DataFile
	err := eachField(b, func(f field) error {
		if err := unknownField("DataFile", knownDataFile, f); err != nil {
			return err
		}
		switch f.num {
		case 1:
			df.Path = string(f.b)
			return f.want(protowire.BytesType, "DataFile")
		case 7:
			df.BaseID, df.HasBase = uint32(f.u), true
			return f.want(protowire.VarintType, "DataFile")
		}
		return nil
	})
	if err == nil && df.Path == "" {
		err = fmt.Errorf("DataFile without a path")
	}
	return df, err
}

func decodeOverlay(b []byte) (DataFile, error) {
	var df DataFile
	found := false
	err := eachField(b, func(f field) error {
		if err := unknownField("DataOverlayFile", knownOverlay, f); err != nil {
			return err
		}
		if f.num != 1 {
			return nil
		}
		if err := f.want(protowire.BytesType, "DataOverlayFile"); err != nil {
			return err
		}
		var err error
		df, err = decodeDataFile(f.b)
		found = true
		return err
	})
	if err == nil && !found {
		err = fmt.Errorf("DataOverlayFile without a data file")
	}
	return df, err
}

func decodeDeletion(b []byte) (DeletionFile, error) {
	var d DeletionFile
	err := eachField(b, func(f field) error {
		if err := unknownField("DeletionFile", knownDeletion, f); err != nil {
			return err
		}
		if f.num == 4 {
			return nil
		}
		if err := f.want(protowire.VarintType, "DeletionFile"); err != nil {
			return err
		}
		switch f.num {
		case 1:
			switch f.u {
			case 0:
			case 1:
				d.Bitmap = true
			default:
				return fmt.Errorf("DeletionFile type %d, unknown to this reader", f.u)
			}
		case 2:
			d.ReadVersion = f.u
		case 3:
			d.ID = f.u
		case 7:
			d.BaseID, d.HasBase = uint32(f.u), true
		}
		return nil
	})
	return d, err
}

func decodeExternal(b []byte) (string, error) {
	var p string
	err := eachField(b, func(f field) error {
		if err := unknownField("ExternalFile", knownExternal, f); err != nil {
			return err
		}
		if f.num == 1 {
			p = string(f.b)
			return f.want(protowire.BytesType, "ExternalFile")
		}
		return nil
	})
	if err == nil && p == "" {
		err = fmt.Errorf("ExternalFile without a path")
	}
	return p, err
}

func decodeBasePath(b []byte) (BasePath, error) {
	var bp BasePath
	err := eachField(b, func(f field) error {
		if err := unknownField("BasePath", knownBasePath, f); err != nil {
			return err
		}
		switch f.num {
		case 1:
			bp.ID = uint32(f.u)
		case 2:
			bp.Name = string(f.b)
		case 3:
			bp.IsDatasetRoot = f.u != 0
		case 4:
			bp.Path = string(f.b)
		}
		return nil
	})
	return bp, err
}

func decodeIndexSection(b []byte) ([]Index, error) {
	var out []Index
	err := eachField(b, func(f field) error {
		if f.num != 1 {
			return fmt.Errorf("IndexSection has field %d, unknown to this reader", f.num)
		}
		if err := f.want(protowire.BytesType, "IndexSection"); err != nil {
			return err
		}
		ix, err := decodeIndex(f.b)
		out = append(out, ix)
		return err
	})
	return out, err
}

func decodeIndex(b []byte) (Index, error) {
	var ix Index
	err := eachField(b, func(f field) error {
		if err := unknownField("IndexMetadata", knownIndex, f); err != nil {
			return err
		}
		switch f.num {
		case 1:
			id, err := decodeUUID(f.b)
			ix.UUID = id
			return err
		case 3:
			ix.Name = string(f.b)
		case 9:
			ix.BaseID, ix.HasBase = uint32(f.u), true
		}
		return nil
	})
	if err == nil && ix.UUID == "" {
		err = fmt.Errorf("IndexMetadata %q without a uuid", ix.Name)
	}
	return ix, err
}

func decodeUUID(b []byte) (string, error) {
	var raw []byte
	err := eachField(b, func(f field) error {
		if f.num == 1 {
			raw = f.b
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if len(raw) != 16 {
		return "", fmt.Errorf("index uuid of %d bytes, want 16", len(raw))
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", raw[0:4], raw[4:6], raw[6:8], raw[8:10], raw[10:16]), nil
}

// blobMarkers are the strings that mark a column holding blobs: Lance
// stores blob bytes outside the data files (managed blob files under
// _blobs/, sidecars in data/<file>/), which a manifest does not list.
var blobMarkers = [][]byte{[]byte("lance-encoding:blob"), []byte("blob")}

// checkSchemaField refuses a schema field (Manifest field 1, lance.file.Field)
// whose metadata or logical type mentions blobs. It matches any string
// value of the message equal to a marker, which errs on the side of
// refusing (a column named "blob" is refused too).
func checkSchemaField(f field) error {
	if f.typ != protowire.BytesType {
		return fmt.Errorf("Manifest field 1 has wire type %d", f.typ)
	}
	if hasBlobMarker(f.b, 0) {
		return fmt.Errorf("schema has a blob column (managed blob files are not listed in manifests)")
	}
	return nil
}

func hasBlobMarker(msg []byte, depth int) bool {
	found := false
	_ = eachField(msg, func(f field) error {
		if f.typ != protowire.BytesType {
			return nil
		}
		for _, m := range blobMarkers {
			if bytes.Equal(f.b, m) {
				found = true
			}
		}
		if !found && depth < 3 && hasBlobMarker(f.b, depth+1) {
			found = true
		}
		return nil
	})
	return found
}
