package lifecycle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// spillInMemory is how many keys a purge keeps in memory before it spills
// the rest to a temporary file. The identity fence must see every object
// before the first delete, and re-listing the table to delete would double
// the listing requests; spilling keeps memory flat for huge tables.
const spillInMemory = 10000

// keyEntry is one object to delete.
type keyEntry struct {
	key  string
	size int64
}

// spill is an append-then-read-once list of keys, in memory up to a bound,
// then in a temporary file. Records are "<key>\x00<size>\x00": keys never
// contain NUL (objstore.ValidateKey).
type spill struct {
	dir  string
	mem  []keyEntry
	file *os.File
	w    *bufio.Writer
	n    int
	size int64 // bytes of the keys added
}

func newSpill(dir string) *spill { return &spill{dir: dir} }

func (s *spill) add(key string, size int64) error {
	s.n++
	s.size += size
	if s.file == nil && len(s.mem) < spillInMemory {
		s.mem = append(s.mem, keyEntry{key, size})
		return nil
	}
	if s.file == nil {
		f, err := os.CreateTemp(s.dir, "reaper-purge-*.keys")
		if err != nil {
			return fmt.Errorf("create spill file: %w", err)
		}
		s.file, s.w = f, bufio.NewWriterSize(f, 1<<16)
	}
	s.w.WriteString(key)
	s.w.WriteByte(0)
	s.w.WriteString(strconv.FormatInt(size, 10))
	return s.w.WriteByte(0)
}

// each calls fn with batches of at most max entries, in insertion order.
func (s *spill) each(max int, fn func([]keyEntry) error) error {
	for i := 0; i < len(s.mem); i += max {
		if err := fn(s.mem[i:min(i+max, len(s.mem))]); err != nil {
			return err
		}
	}
	if s.file == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("write spill file: %w", err)
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("rewind spill file: %w", err)
	}
	r := bufio.NewReaderSize(s.file, 1<<16)
	batch := make([]keyEntry, 0, max)
	for {
		key, err := r.ReadString(0)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read spill file: %w", err)
		}
		sz, err := r.ReadString(0)
		if err != nil {
			return fmt.Errorf("read spill file: %w", err)
		}
		size, _ := strconv.ParseInt(string(bytes.TrimSuffix([]byte(sz), []byte{0})), 10, 64)
		batch = append(batch, keyEntry{key[:len(key)-1], size})
		if len(batch) == max {
			if err := fn(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		return fn(batch)
	}
	return nil
}

// close removes the spill file.
func (s *spill) close() {
	if s.file != nil {
		s.file.Close()
		os.Remove(s.file.Name())
	}
}
