package s3ddb

// SetPageLimit lowers the Limit of each Query, so a test crosses pages.
func SetPageLimit(s *Store, n int32) { s.rows.pageLimit = n }
