package local

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"

	"golang.org/x/sys/unix"
)

// This file owns reading directories: getdents64 on a descriptor, keeping
// each entry's d_type, so a listing never looks an entry up by path and
// tells a directory from a link without following it.

// direntBufSize is the getdents buffer: several hundred entries a round.
const direntBufSize = 32 << 10

// Offsets in a linux_dirent64 record, the same on every Linux arch:
// d_ino u64, d_off s64, d_reclen u16, d_type u8, then the NUL-terminated name.
const (
	direntInoOff    = 0
	direntReclenOff = 16
	direntTypeOff   = 18
	direntNameOff   = 19
)

// dirent is one directory entry.
type dirent struct {
	name string
	typ  uint8 // unix.DT_*
}

// dirReader reads the entries of the directory fd, which it does not own.
type dirReader struct {
	fd       int
	buf      []byte
	pos, end int
	eof      bool
}

func newDirReader(fd int) *dirReader {
	return &dirReader{fd: fd, buf: make([]byte, direntBufSize)}
}

// next returns the next entry other than "." and ".."; ok is false at the
// end of the directory.
func (r *dirReader) next() (e dirent, ok bool, err error) {
	for {
		if r.pos >= r.end {
			if r.eof {
				return dirent{}, false, nil
			}
			if err := r.fill(); err != nil {
				return dirent{}, false, err
			}
			continue
		}
		rec := r.buf[r.pos:r.end]
		reclen := int(binary.NativeEndian.Uint16(rec[direntReclenOff:]))
		if reclen < direntNameOff || reclen > len(rec) {
			return dirent{}, false, errors.New("read directory: malformed dirent record")
		}
		r.pos += reclen
		name := rec[direntNameOff:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if binary.NativeEndian.Uint64(rec[direntInoOff:]) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		return dirent{name: string(name), typ: rec[direntTypeOff]}, true, nil
	}
}

// fill reads the next getdents round.
func (r *dirReader) fill() error {
	var n int
	err := ignoringEINTR(func() (err error) {
		n, err = unix.Getdents(r.fd, r.buf)
		return err
	})
	if err != nil {
		return err
	}
	r.pos, r.end, r.eof = 0, n, n == 0
	return nil
}

// isDir reports whether e is a directory, by its d_type or, on a
// filesystem that leaves it unknown, by lstat; gone is true if the entry
// vanished since it was read.
func (r *dirReader) isDir(e dirent) (dir, gone bool, err error) {
	if e.typ != unix.DT_UNKNOWN {
		return e.typ == unix.DT_DIR, false, nil
	}
	st, err := lstatAt(r.fd, e.name)
	if isNotFound(err) {
		return false, true, nil
	}
	if err != nil {
		return false, false, err
	}
	return isDir(&st), false, nil
}

// ownTemp reports whether the entry e is a temp file of reaper's
// (isOwnTemp): one lstat, only for an entry named like one.
func (r *dirReader) ownTemp(e dirent) bool {
	if !isTempName(e.name) || (e.typ != unix.DT_REG && e.typ != unix.DT_UNKNOWN) {
		return false
	}
	st, err := lstatAt(r.fd, e.name)
	return err == nil && isOwnTemp(e.name, &st)
}

// readChunk reads at least max entries (all when max < 0) or up to the end
// of the directory, keeping the names that start with namePrefix and are
// not reaper's temp files (ownTemp). Directories carry a trailing "/" so "a.lance/x"
// sorts after "a.lance.deleted", as the keys do; every other entry (file,
// link, fifo, socket, device) is an object. eof reports the directory is
// exhausted. A directory removed while it is read has no more entries.
func (r *dirReader) readChunk(ctx context.Context, namePrefix string, max int) (names []string, eof bool, err error) {
	for i := 0; max < 0 || len(names) < max; i++ {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
		}
		e, ok, err := r.next()
		if errors.Is(err, unix.ENOENT) {
			return names, true, nil
		}
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return names, true, nil
		}
		// Only reaper's own temp files are hidden (name, type and mark): a
		// user's file named like one, inside a table or anywhere, is an
		// object like any other, walked, fenced and deleted with the rest.
		if !strings.HasPrefix(e.name, namePrefix) || r.ownTemp(e) {
			continue
		}
		dir, gone, err := r.isDir(e)
		switch {
		case err != nil:
			return nil, false, err
		case gone:
		case dir:
			names = append(names, e.name+"/")
		default:
			names = append(names, e.name)
		}
	}
	return names, false, nil
}
