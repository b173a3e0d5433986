package ledger

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// decode reads every row of one ledger file. Columns are found by name, so a
// later version may add columns; a missing column (unless optional: added
// after files without it were written) or a changed type is an error.
func decode(ctx context.Context, body []byte) ([]Row, error) {
	tbl, err := pqarrow.ReadTable(ctx, bytes.NewReader(body), parquet.NewReaderProperties(memory.DefaultAllocator),
		pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer tbl.Release()
	n := int(tbl.NumRows())
	rows := make([]Row, n)
	for _, c := range columns {
		if c.optional && len(tbl.Schema().FieldIndices(c.field.Name)) == 0 {
			continue
		}
		ch, err := columnChunks(tbl, c.field)
		if err != nil {
			return nil, err
		}
		if err := fill(rows, c.field.Name, ch); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// columnChunks returns the chunks of the named column after checking its type.
func columnChunks(tbl arrow.Table, want arrow.Field) ([]arrow.Array, error) {
	idx := tbl.Schema().FieldIndices(want.Name)
	if len(idx) != 1 {
		return nil, fmt.Errorf("column %s: found %d times, want once", want.Name, len(idx))
	}
	got := tbl.Schema().Field(idx[0])
	if !arrow.TypeEqual(got.Type, want.Type) {
		return nil, fmt.Errorf("column %s: type %s, want %s", want.Name, got.Type, want.Type)
	}
	return tbl.Column(idx[0]).Data().Chunks(), nil
}

// fill copies one column into rows; a null in a non-null column is an error.
func fill(rows []Row, name string, chunks []arrow.Array) error {
	i := 0
	for _, a := range chunks {
		for j := 0; j < a.Len(); j, i = j+1, i+1 {
			if i >= len(rows) {
				return fmt.Errorf("column %s: more values than rows", name)
			}
			if err := set(&rows[i], name, a, j); err != nil {
				return fmt.Errorf("column %s row %d: %w", name, i, err)
			}
		}
	}
	if i != len(rows) {
		return fmt.Errorf("column %s: %d values for %d rows", name, i, len(rows))
	}
	return nil
}

// set stores value j of a into the field of r that column name holds.
func set(r *Row, name string, a arrow.Array, j int) error {
	if a.IsNull(j) {
		switch name {
		case ColReason, ColDeletedAt, ColTTLMs, ColPurgeAfter, ColError, ColRecoveredBy, ColLocation:
			return nil // zero value is null
		}
		return fmt.Errorf("null in a non-null column")
	}
	switch v := a.(type) {
	case *array.String:
		s := v.Value(j)
		switch name {
		case ColPassID:
			r.PassID = s
		case ColRoot:
			r.Root = s
		case ColTable:
			r.Table = s
		case ColAction:
			r.Action = s
		case ColReason:
			r.Reason = s
		case ColError:
			r.Error = s
		case ColVersion:
			r.Version = s
		case ColHost:
			r.Host = s
		case ColRecoveredBy:
			r.RecoveredBy = s
		case ColLocation:
			r.Location = s
		}
	case *array.Int64:
		n := v.Value(j)
		switch name {
		case ColTTLMs:
			d := time.Duration(n) * time.Millisecond
			r.TTL = &d
		case ColObjects:
			r.Objects = n
		case ColBytes:
			r.Bytes = n
		}
	case *array.Timestamp:
		t := time.UnixMilli(int64(v.Value(j))).UTC()
		switch name {
		case ColDeletedAt:
			r.DeletedAt = t
		case ColPurgeAfter:
			r.PurgeAfter = t
		case ColStarted:
			r.Started = t
		case ColFinished:
			r.Finished = t
		}
	default:
		return fmt.Errorf("unexpected array type %T", a)
	}
	return nil
}
