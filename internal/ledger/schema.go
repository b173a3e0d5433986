package ledger

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lance-reaper/reaper/internal/outcome"
)

// Column names, in file order.
const (
	ColPassID     = "pass_id"
	ColRoot       = "root"
	ColTable      = "table"
	ColAction     = "action"
	ColReason     = "reason"
	ColDeletedAt  = "deleted_at"
	ColTTLMs      = "ttl_ms"
	ColPurgeAfter = "purge_after"
	ColObjects    = "objects"
	ColBytes      = "bytes"
	ColStarted    = "started"
	ColFinished   = "finished"
	ColError      = "error"
	ColVersion    = "reaper_version"
	ColHost       = "host"
	// ColRecoveredBy came after the first release: files without it read
	// as null (column.optional).
	ColRecoveredBy = "recovered_by"
	// ColLocation came with tables in LanceDB namespaces (optional too).
	ColLocation = "location"
)

// column is one documented column of the ledger. An optional column was
// added after files without it were written: reading such a file gives
// its zero value (null), where a missing required column is an error.
type column struct {
	field    arrow.Field
	doc      string
	optional bool
}

var tsType = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}

func col(name string, typ arrow.DataType, nullable bool, doc string) column {
	return column{field: arrow.Field{Name: name, Type: typ, Nullable: nullable}, doc: doc}
}

// columns is the single source of the schema and its documentation.
var columns = []column{
	col(ColPassID, arrow.BinaryTypes.String, false, "id of the pass that wrote the row"),
	col(ColRoot, arrow.BinaryTypes.String, false, "database root URI, without secrets"),
	col(ColTable, arrow.BinaryTypes.String, false, `table name, without ".lance"`),
	col(ColAction, arrow.BinaryTypes.String, false, actionsDoc()),
	col(ColReason, arrow.BinaryTypes.String, true, "why the action was taken; null when there is nothing to explain"),
	col(ColDeletedAt, tsType, true, "the marker's deleted_at; null without a readable marker"),
	col(ColTTLMs, arrow.PrimitiveTypes.Int64, true, "the TTL applied, in milliseconds; null when unknown"),
	col(ColPurgeAfter, tsType, true, "deleted_at + TTL; null when either is unknown"),
	col(ColObjects, arrow.PrimitiveTypes.Int64, false, "objects deleted (dry_run: that would be deleted)"),
	col(ColBytes, arrow.PrimitiveTypes.Int64, false, "bytes deleted (dry_run: that would be deleted)"),
	col(ColStarted, tsType, false, "when work on the table started"),
	col(ColFinished, tsType, false, "when work on the table finished"),
	col(ColError, arrow.BinaryTypes.String, true, "the error of a failed or conflict row; null otherwise"),
	col(ColVersion, arrow.BinaryTypes.String, false, "version of the reaper that wrote the row"),
	col(ColHost, arrow.BinaryTypes.String, false, "host name of the reaper that wrote the row"),
	{field: arrow.Field{Name: ColRecoveredBy, Type: arrow.BinaryTypes.String, Nullable: true}, optional: true,
		doc: "id of the pass that folded the row from the journal of a pass killed before it wrote its file; null otherwise"},
	{field: arrow.Field{Name: ColLocation, Type: arrow.BinaryTypes.String, Nullable: true}, optional: true,
		doc: "a table in a LanceDB namespace: its directory under the root (<8 hex>_<object id>/; table is its object id); null for a root table"},
}

// actionsDoc lists the actions the column holds: the outcome vocabulary.
func actionsDoc() string {
	var as []string
	for _, a := range outcome.Actions() {
		as = append(as, string(a))
	}
	return strings.Join(as, ", ")
}

// Schema returns the Arrow schema of a ledger file.
func Schema() *arrow.Schema {
	fields := make([]arrow.Field, len(columns))
	for i, c := range columns {
		fields[i] = c.field
	}
	return arrow.NewSchema(fields, nil)
}

// SchemaDoc renders the columns as a plain-text table for docs/FORMAT.md:
// name, Arrow type, nullability and meaning, one column per line.
func SchemaDoc() string {
	var b strings.Builder
	for _, c := range columns {
		null := "not null"
		if c.field.Nullable {
			null = "null"
		}
		fmt.Fprintf(&b, "%-15s %-22s %-9s %s\n", c.field.Name, c.field.Type, null, c.doc)
	}
	return b.String()
}
