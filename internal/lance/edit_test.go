package lance

import (
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// fixture is the table LanceDB 0.39 wrote (testdata/lancedb-0.39/README.md).
const fixture = "testdata/lancedb-0.39/t.lance"

// fixtureWrittenAt is where LanceDB wrote it: its branch names main so.
const fixtureWrittenAt = "/tmp/fx/t.lance"

// copyFixture copies the fixture table to <root>/t.lance and points its
// branch's base paths there; it returns the root.
func copyFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	dst := filepath.Join(root, "t.lance")
	err := filepath.WalkDir(fixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(fixture, p)
		body, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if filepath.Dir(filepath.Dir(rel)) == filepath.Join("tree", "dev") && filepath.Ext(p) == ".manifest" {
			body = editManifest(t, body, func(msg []byte) []byte { return setBasePath(t, msg, dst) })
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755))
		return os.WriteFile(filepath.Join(dst, rel), body, 0o644)
	})
	require.NoError(t, err)
	return root
}

// editManifest replaces a manifest file's Manifest message with
// edit(message), keeping the sections before it and the footer's position.
func editManifest(t *testing.T, file []byte, edit func(msg []byte) []byte) []byte {
	t.Helper()
	msg, err := manifestMessage(file)
	require.NoError(t, err)
	pos := len(file) - footerLen - len(msg) - lengthPrefix
	out := append([]byte{}, file[:pos]...)
	msg = edit(append([]byte{}, msg...))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(msg)))
	out = append(out, msg...)
	return append(out, file[len(file)-footerLen:]...)
}

// mapFields rebuilds a message, each field replaced by fn(field, its
// encoding): return the encoding to keep it, nil to drop it.
func mapFields(t *testing.T, msg []byte, fn func(f field, raw []byte) []byte) []byte {
	t.Helper()
	var out []byte
	rest := msg
	require.NoError(t, eachField(msg, func(f field) error {
		_, _, n := protowire.ConsumeField(rest)
		out = append(out, fn(f, rest[:n])...)
		rest = rest[n:]
		return nil
	}))
	return out
}

// setField replaces a varint field's value (or appends the field).
func setVarint(t *testing.T, msg []byte, num protowire.Number, v uint64) []byte {
	out := mapFields(t, msg, func(f field, raw []byte) []byte {
		if f.num == num {
			return nil
		}
		return raw
	})
	out = protowire.AppendTag(out, num, protowire.VarintType)
	return protowire.AppendVarint(out, v)
}

// appendBytes appends a length-delimited field.
func appendBytes(msg []byte, num protowire.Number, b []byte) []byte {
	msg = protowire.AppendTag(msg, num, protowire.BytesType)
	return protowire.AppendBytes(msg, b)
}

// editFragments applies fn to every DataFragment of a Manifest message.
func editFragments(t *testing.T, msg []byte, fn func(frag []byte) []byte) []byte {
	return mapFields(t, msg, func(f field, raw []byte) []byte {
		if f.num != 2 {
			return raw
		}
		return appendBytes(nil, 2, fn(slices.Clone(f.b)))
	})
}

// setBasePath points every BasePath of a Manifest message at path.
func setBasePath(t *testing.T, msg []byte, path string) []byte {
	return mapFields(t, msg, func(f field, raw []byte) []byte {
		if f.num != 18 {
			return raw
		}
		bp := mapFields(t, f.b, func(g field, raw []byte) []byte {
			if g.num == 4 {
				return appendBytes(nil, 4, []byte(path))
			}
			return raw
		})
		return appendBytes(nil, 18, bp)
	})
}
