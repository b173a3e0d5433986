package ledger_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/lance-reaper/reaper/internal/ledger"
	"github.com/lance-reaper/reaper/internal/objstore"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest"
	"github.com/lance-reaper/reaper/internal/objstore/objstoretest/memstore"
	"github.com/lance-reaper/reaper/internal/outcome"
)

func TestMain(m *testing.M) { objstoretest.Main(m) }

// forEachBackend runs fn on a fresh, empty store per backend
// (objstoretest.Backends); S3 skips without a server.
func forEachBackend(t *testing.T, fn func(t *testing.T, s objstore.Store)) {
	objstoretest.ForEachBackend(t, func(t *testing.T, b objstoretest.Backend) { fn(t, b.NewRoot(t).Open(t)) })
}

var t0 = time.Date(2026, 3, 14, 9, 26, 53, 589_793_238, time.UTC)

func dur(d time.Duration) *time.Duration { return &d }

// sampleRows has one row per action, with and without the nullable fields.
func sampleRows(passID string, started time.Time) []ledger.Row {
	var rows []ledger.Row
	for i, oa := range outcome.Actions() {
		a := string(oa)
		r := ledger.Row{
			PassID:   passID,
			Root:     "s3://bucket/db",
			Table:    fmt.Sprintf("t%02d_%s", i, a),
			Action:   a,
			Objects:  int64(i * 10),
			Bytes:    int64(i) << 30,
			Started:  started.Add(time.Duration(i) * time.Second),
			Finished: started.Add(time.Duration(i)*time.Second + 500*time.Millisecond),
			Version:  "v1.2.3",
			Host:     "host-a",
		}
		if i%2 == 0 { // every other row has the nullable fields set
			r.Reason = "reason " + a
			r.DeletedAt = started.Add(-8 * 24 * time.Hour)
			r.TTL = dur(7 * 24 * time.Hour)
			r.PurgeAfter = r.DeletedAt.Add(*r.TTL)
			r.Error = "error " + a
		}
		rows = append(rows, r)
	}
	return rows
}

// stored is what Read returns for r: UTC, millisecond times.
func stored(r ledger.Row) ledger.Row {
	ms := func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		return time.UnixMilli(t.UnixMilli()).UTC()
	}
	r.DeletedAt, r.PurgeAfter, r.Started, r.Finished = ms(r.DeletedAt), ms(r.PurgeAfter), ms(r.Started), ms(r.Finished)
	return r
}

func writePass(t *testing.T, s objstore.Store, passID string, started time.Time, rows []ledger.Row) string {
	t.Helper()
	w := ledger.NewWriter(s, passID, started)
	for _, r := range rows {
		w.Add(r)
	}
	key, err := w.Close(t.Context())
	require.NoError(t, err, "close ledger of pass %s", passID)
	return key
}

func TestRoundTrip(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		rows := sampleRows("pass-1", t0)
		slices.Reverse(rows) // Read sorts
		key := writePass(t, s, "pass-1", t0, rows)
		last := t0.Add(time.Duration(len(outcome.Actions())-1)*time.Second + 500*time.Millisecond)
		require.Equal(t, "passes/2026/03/14/"+last.UTC().Format("20060102T150405.000Z")+"-pass-1.parquet", key, "key: the pass's end (last Finished)")

		got, err := ledger.Read(t.Context(), s, time.Time{})
		require.NoError(t, err)
		want := sampleRows("pass-1", t0)
		for i := range want {
			want[i] = stored(want[i])
		}
		require.Equal(t, want, got, "rows: got/want")
		require.Nil(t, got[1].TTL, "null ttl_ms reads back as nil")
		require.True(t, got[1].DeletedAt.IsZero(), "null deleted_at reads back as zero")
	})
}

func TestAddDefaults(t *testing.T) {
	s := memstore.New()
	w := ledger.NewWriter(s, "p", t0)
	w.Add(ledger.Row{Table: "a", Action: string(outcome.Skipped)})
	_, err := w.Close(t.Context())
	require.NoError(t, err)
	got, err := ledger.Read(t.Context(), s, time.Time{})
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, "p", got[0].PassID, "empty PassID takes the writer's")
	require.True(t, got[0].Started.Equal(t0.Truncate(time.Millisecond)), "zero Started takes the pass start: got %v", got[0].Started)
	require.True(t, got[0].Finished.Equal(got[0].Started), "zero Finished takes Started: got %v", got[0].Finished)
}

func TestEmptyPassWritesFile(t *testing.T) {
	s := memstore.New()
	key := writePass(t, s, "empty", t0, nil)
	require.Equal(t, "passes/2026/03/14/20260314T092653.589Z-empty.parquet", key, "empty pass key: its start")
	_, err := s.Head(t.Context(), key)
	require.NoError(t, err, "an empty pass still writes its file")
	got, err := ledger.Read(t.Context(), s, time.Time{})
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestReadEmptyStore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		got, err := ledger.Read(t.Context(), s, time.Time{})
		require.NoError(t, err)
		require.Empty(t, got)
	})
}

func TestReadSince(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		day := 24 * time.Hour
		row := func(table string, started, finished time.Time) ledger.Row {
			return ledger.Row{Root: "/db", Table: table, Action: string(outcome.Purged), Started: started, Finished: finished, Version: "v", Host: "h"}
		}
		old := t0.Add(-3 * day)
		writePass(t, s, "old", old, []ledger.Row{row("a", old, old.Add(time.Minute))})
		// Spans midnight: starts the day before since, ends after since.
		midnight := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
		late := midnight.Add(-time.Minute)
		writePass(t, s, "late", late, []ledger.Row{
			row("b", late, late.Add(10*time.Second)), // before since
			row("c", late.Add(30*time.Second), midnight.Add(time.Minute)),
		})
		writePass(t, s, "now", t0, []ledger.Row{row("d", t0, t0.Add(time.Second)), row("a", t0, t0)})

		since := midnight
		got, err := ledger.Read(t.Context(), s, since)
		require.NoError(t, err)
		var names []string
		for _, r := range got {
			names = append(names, r.PassID+"/"+r.Table)
		}
		require.Equal(t, []string{"late/c", "now/a", "now/d"}, names, "rows finished since %v, by Started then Table", since)

		got, err = ledger.Read(t.Context(), s, t0.Add(time.Hour))
		require.NoError(t, err)
		require.Empty(t, got, "nothing finished after the last pass")

		got, err = ledger.Read(t.Context(), s, old.Add(-day))
		require.NoError(t, err)
		require.Len(t, got, 5, "every row")
	})
}

func TestReadCorruptFile(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s objstore.Store) {
		writePass(t, s, "good", t0, sampleRows("good", t0))
		bad := "passes/2026/03/14/20260314T100000.000Z-bad.parquet"
		_, err := s.Put(t.Context(), bad, []byte("not parquet"))
		require.NoError(t, err)
		_, err = ledger.Read(t.Context(), s, time.Time{})
		require.ErrorContains(t, err, bad, "error names the corrupt key")
	})
}

func TestReadWrongSchema(t *testing.T) {
	s := memstore.New()
	schema := arrow.NewSchema([]arrow.Field{{Name: "pass_id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	require.NoError(t, err)
	require.NoError(t, fw.Write(rec))
	require.NoError(t, fw.Close())
	key := "passes/2026/03/14/20260314T100000.000Z-other.parquet"
	_, err = s.Put(t.Context(), key, buf.Bytes())
	require.NoError(t, err)
	_, err = ledger.Read(t.Context(), s, time.Time{})
	require.ErrorContains(t, err, key)
	require.ErrorContains(t, err, "column pass_id: type int64, want utf8")
}

func TestReadUnknownKey(t *testing.T) {
	for _, key := range []string{
		"passes/README",
		"passes/2026/03/14/notes.txt",
		"passes/2026/03/14/20260314T100000.000Z-x.json",
		"passes/2026/03/14/20260315T100000.000Z-x.parquet", // day and timestamp disagree
		"passes/2026/3/14/20260314T100000.000Z-x.parquet",
		"journal/README",
		"journal/pass-a/notes.txt",
		"journal/pass-a/0123.json",
		"journal/pass a/lease",
	} {
		t.Run(strings.ReplaceAll(key, "/", "_"), func(t *testing.T) {
			s := memstore.New()
			_, err := s.Put(t.Context(), key, []byte("x"))
			require.NoError(t, err)
			_, err = ledger.Read(t.Context(), s, time.Time{})
			require.ErrorContains(t, err, key)
		})
	}
}

func TestConcurrentAdd(t *testing.T) {
	s := memstore.New()
	w := ledger.NewWriter(s, "busy", t0)
	const workers, each = 16, 50
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for j := range each {
				w.Add(ledger.Row{Table: fmt.Sprintf("t%02d_%02d", i, j), Action: string(outcome.Purged), Version: "v", Host: "h"})
			}
		})
	}
	wg.Wait()
	require.Equal(t, workers*each, w.Len())
	_, err := w.Close(t.Context())
	require.NoError(t, err)
	got, err := ledger.Read(t.Context(), s, time.Time{})
	require.NoError(t, err)
	require.Len(t, got, workers*each, "every added row is written")
	require.True(t, slices.IsSortedFunc(got, func(a, b ledger.Row) int { return strings.Compare(a.Table, b.Table) }), "same Started: sorted by Table")
}

func TestCloseErrors(t *testing.T) {
	s := memstore.New()
	w := ledger.NewWriter(s, "p", t0)
	_, err := w.Close(t.Context())
	require.NoError(t, err)
	_, err = w.Close(t.Context())
	require.ErrorContains(t, err, "already closed")

	for _, id := range []string{"", "a/b", "a:b", "-x", strings.Repeat("x", 129)} {
		_, err := ledger.NewWriter(s, id, t0).Close(t.Context())
		require.Error(t, err, "pass id %q", id)
	}
}

func TestKeySortsByTime(t *testing.T) {
	var keys []string
	for _, d := range []time.Duration{0, time.Millisecond, time.Second, time.Hour, 30 * 24 * time.Hour, 400 * 24 * time.Hour} {
		k := ledger.Key("p", t0.Add(d).In(time.FixedZone("X", 3600)))
		require.NotContains(t, k, ":")
		require.NoError(t, objstore.ValidateKey(k))
		keys = append(keys, k)
	}
	require.True(t, slices.IsSorted(keys), "keys sort by time: %v", keys)
}

// TestPlainReader reads a ledger file with nothing but pqarrow and checks the
// documented column names and types, the metadata and the compression.
func TestPlainReader(t *testing.T) {
	s := memstore.New()
	key := writePass(t, s, "plain", t0, sampleRows("plain", t0))
	body, _, err := s.Get(t.Context(), key, 1<<20)
	require.NoError(t, err)

	pf, err := file.NewParquetReader(bytes.NewReader(body))
	require.NoError(t, err)
	defer pf.Close()
	md := pf.MetaData()
	require.Equal(t, int64(len(outcome.Actions())), md.NumRows)
	id := md.KeyValueMetadata().FindValue(ledger.MetaPassID)
	require.NotNil(t, id, "metadata %s", ledger.MetaPassID)
	require.Equal(t, "plain", *id)
	started := md.KeyValueMetadata().FindValue(ledger.MetaPassStarted)
	require.NotNil(t, started, "metadata %s", ledger.MetaPassStarted)
	require.Equal(t, "2026-03-14T09:26:53.589Z", *started)
	for i := range md.Schema.NumColumns() {
		cc, err := md.RowGroup(0).ColumnChunk(i)
		require.NoError(t, err)
		require.Equal(t, compress.Codecs.Zstd, cc.Compression(), "column %d compression", i)
	}

	{
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		require.NoError(t, err)
		got, err := fr.Schema()
		require.NoError(t, err)
		type col struct {
			Name     string
			Type     string
			Nullable bool
		}
		cols := func(sc *arrow.Schema) []col {
			var out []col
			for _, f := range sc.Fields() {
				out = append(out, col{f.Name, f.Type.String(), f.Nullable})
			}
			return out
		}
		ts := "timestamp[ms, tz=UTC]"
		require.Equal(t, []col{
			{"pass_id", "utf8", false},
			{"root", "utf8", false},
			{"table", "utf8", false},
			{"action", "utf8", false},
			{"reason", "utf8", true},
			{"deleted_at", ts, true},
			{"ttl_ms", "int64", true},
			{"purge_after", ts, true},
			{"objects", "int64", false},
			{"bytes", "int64", false},
			{"started", ts, false},
			{"finished", ts, false},
			{"error", "utf8", true},
			{"reaper_version", "utf8", false},
			{"host", "utf8", false},
			{"recovered_by", "utf8", true},
			{"location", "utf8", true},
		}, cols(got), "documented schema")
		require.Equal(t, cols(ledger.Schema()), cols(got), "Schema() matches the file")

		tbl, err := fr.ReadTable(t.Context())
		require.NoError(t, err)
		defer tbl.Release()
		action := tbl.Column(3).Data().Chunk(0).(*array.String)
		require.Equal(t, string(outcome.Purged), action.Value(0))
		ttl := tbl.Column(6).Data().Chunk(0).(*array.Int64)
		require.Equal(t, (7 * 24 * time.Hour).Milliseconds(), ttl.Value(0), "ttl_ms of row 0")
		require.True(t, ttl.IsNull(1), "ttl_ms of row 1 is null")
	}
}

func TestCheckLocation(t *testing.T) {
	for uri, want := range map[string]string{
		"/var/lib/reaper/ledger":             "",
		"file:///data/audit":                 "",
		"s3://bucket/audit/ledger":           "",
		"s3://bucket.lance/audit":            "", // a bucket is not a table
		"/data/lancedb/my_table.lance":       "inside table directory",
		"/data/lancedb/my_table.lance/audit": "inside table directory",
		"s3://bucket/db/t.lance/_ledger":     "inside table directory",
		"gs://bucket/audit":                  "",
		"gs://bucket/db/t.lance/_ledger":     "inside table directory",
		"relative/dir":                       "relative paths",
		"":                                   "empty",
	} {
		err := ledger.CheckLocation(uri)
		if want == "" {
			require.NoError(t, err, "location %q", uri)
			continue
		}
		require.ErrorContains(t, err, want, "location %q", uri)
	}
}

// TestSchemaDocInPackageDoc keeps the package comment in step with SchemaDoc.
func TestSchemaDocInPackageDoc(t *testing.T) {
	src, err := os.ReadFile("ledger.go")
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(ledger.SchemaDoc()), "\n") {
		require.Contains(t, string(src), "//\t"+line+"\n", "package doc lacks schema line")
	}
}

// A file written before recovered_by existed (its first 15 columns only)
// still reads, the new columns (recovered_by, then location) null.
func TestReadFileWithoutRecoveredBy(t *testing.T) {
	s := memstore.New()
	fields := ledger.Schema().Fields()
	before := slices.IndexFunc(fields, func(f arrow.Field) bool { return f.Name == ledger.ColRecoveredBy })
	require.Equal(t, 15, before)
	schema := arrow.NewSchema(fields[:before], nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, v := range []string{"old-pass", "/db", "t", string(outcome.Purged)} {
		b.Field(i).(*array.StringBuilder).Append(v)
	}
	b.Field(4).AppendNull()
	b.Field(5).AppendNull()
	b.Field(6).AppendNull()
	b.Field(7).AppendNull()
	b.Field(8).(*array.Int64Builder).Append(3)
	b.Field(9).(*array.Int64Builder).Append(30)
	b.Field(10).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.UnixMilli()))
	b.Field(11).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.UnixMilli()))
	b.Field(12).AppendNull()
	b.Field(13).(*array.StringBuilder).Append("v0")
	b.Field(14).(*array.StringBuilder).Append("h")
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &buf, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	require.NoError(t, err)
	require.NoError(t, fw.Write(rec))
	require.NoError(t, fw.Close())
	_, err = s.Put(t.Context(), ledger.Key("old-pass", t0), buf.Bytes())
	require.NoError(t, err)
	rows, err := ledger.Read(t.Context(), s, time.Time{})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "t", rows[0].Table)
	require.Empty(t, rows[0].RecoveredBy)
	require.Empty(t, rows[0].Location)
}
