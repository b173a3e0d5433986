package ledger

import (
	"bytes"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// File metadata keys. MetaRecoveredBy is set on a file folded from a dead
// pass's journal (recover.go), whose pass_id and pass_started are the dead
// pass's.
const (
	MetaPassID      = "reaper.pass_id"
	MetaPassStarted = "reaper.pass_started"
	MetaRecoveredBy = "reaper.recovered_by"
)

// fileMeta is a file's key-value metadata, in order.
type fileMeta [][2]string

// passMeta is the metadata of pass passID's file; recoveredBy is "" unless
// another pass folded it from passID's journal.
func passMeta(passID string, started time.Time, recoveredBy string) fileMeta {
	m := fileMeta{{MetaPassID, passID}, {MetaPassStarted, started.UTC().Format(jsonTimeLayout)}}
	if recoveredBy != "" {
		m = append(m, [2]string{MetaRecoveredBy, recoveredBy})
	}
	return m
}

// encode renders rows as one Parquet file.
func encode(rows []Row, meta fileMeta) ([]byte, error) {
	e, err := newStreamEncoder(max(len(rows), 1))
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if err := e.add(r); err != nil {
			e.abort()
			return nil, err
		}
	}
	return e.finish(meta)
}

// streamEncoder writes rows into a Parquet file in memory, a row group of
// batch rows at a time.
type streamEncoder struct {
	b     *array.RecordBuilder
	fw    *pqarrow.FileWriter
	buf   bytes.Buffer
	batch int
}

func newStreamEncoder(batch int) (*streamEncoder, error) {
	mem := memory.DefaultAllocator
	e := &streamEncoder{b: array.NewRecordBuilder(mem, Schema()), batch: batch}
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithAllocator(mem),
	)
	fw, err := pqarrow.NewFileWriter(Schema(), &e.buf, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(mem)))
	if err != nil {
		e.b.Release()
		return nil, err
	}
	e.fw = fw
	return e, nil
}

// add appends a row, writing a row group once a batch is full.
func (e *streamEncoder) add(r Row) error {
	appendRow(e.b, r)
	if e.b.Field(0).Len() >= e.batch {
		return e.flush()
	}
	return nil
}

// flush writes the rows held as one row group.
func (e *streamEncoder) flush() error {
	if e.b.Field(0).Len() == 0 {
		return nil
	}
	rec := e.b.NewRecordBatch()
	defer rec.Release()
	return e.fw.Write(rec)
}

// finish writes what is held and the file's metadata and returns the file.
// A file of no rows is written with none.
func (e *streamEncoder) finish(meta fileMeta) ([]byte, error) {
	defer e.b.Release()
	if err := e.flush(); err != nil {
		e.fw.Close()
		return nil, err
	}
	for _, kv := range meta {
		if err := e.fw.AppendKeyValueMetadata(kv[0], kv[1]); err != nil {
			e.fw.Close()
			return nil, err
		}
	}
	if err := e.fw.Close(); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

// abort releases an encoder whose file will not be written.
func (e *streamEncoder) abort() {
	e.b.Release()
	_ = e.fw.Close()
}

// jsonTimeLayout is RFC 3339 with milliseconds, the ledger's precision.
const jsonTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// appendRow appends r in column order; see columns.
func appendRow(b *array.RecordBuilder, r Row) {
	f := b.Fields()
	f[0].(*array.StringBuilder).Append(r.PassID)
	f[1].(*array.StringBuilder).Append(r.Root)
	f[2].(*array.StringBuilder).Append(r.Table)
	f[3].(*array.StringBuilder).Append(r.Action)
	appendString(f[4].(*array.StringBuilder), r.Reason)
	appendTime(f[5].(*array.TimestampBuilder), r.DeletedAt)
	if r.TTL != nil {
		f[6].(*array.Int64Builder).Append(r.TTL.Milliseconds())
	} else {
		f[6].AppendNull()
	}
	appendTime(f[7].(*array.TimestampBuilder), r.PurgeAfter)
	f[8].(*array.Int64Builder).Append(r.Objects)
	f[9].(*array.Int64Builder).Append(r.Bytes)
	f[10].(*array.TimestampBuilder).Append(arrow.Timestamp(r.Started.UnixMilli()))
	f[11].(*array.TimestampBuilder).Append(arrow.Timestamp(r.Finished.UnixMilli()))
	appendString(f[12].(*array.StringBuilder), r.Error)
	f[13].(*array.StringBuilder).Append(r.Version)
	f[14].(*array.StringBuilder).Append(r.Host)
	appendString(f[15].(*array.StringBuilder), r.RecoveredBy)
	appendString(f[16].(*array.StringBuilder), r.Location)
}

// appendString writes "" as null.
func appendString(b *array.StringBuilder, s string) {
	if s == "" {
		b.AppendNull()
		return
	}
	b.Append(s)
}

// appendTime writes the zero time as null.
func appendTime(b *array.TimestampBuilder, t time.Time) {
	if t.IsZero() {
		b.AppendNull()
		return
	}
	b.Append(arrow.Timestamp(t.UnixMilli()))
}
