package s3ddb

// SetPageLimit lowers the Limit of each Query, so a test crosses pages.
func SetPageLimit(s *Store, n int32) { s.rows.pageLimit = n }

// WrapClient puts wrap around the store's DynamoDB client (fault
// injection around the real server).
func WrapClient(s *Store, wrap func(API) API) { s.rows.client = wrap(s.rows.client) }
