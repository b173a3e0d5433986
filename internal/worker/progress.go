package worker

import "time"

// Progress is one table's purge in flight, for a progress display
// (reaper purge --progress). Total is zero until the table has been walked.
type Progress struct {
	Root, Table              string
	Objects, Bytes           int64 // deleted so far
	TotalObjects, TotalBytes int64 // to delete, once walked
	Started                  time.Time
	// Done is set on the last event of the table, whatever its outcome.
	Done bool
}
