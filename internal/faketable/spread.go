package faketable

// spreadIndexFiles is how many index files share a directory in Spread: an
// index Lance writes in parts, so a big table's _indices/ holds a few
// directories of many files rather than one directory per file.
const spreadIndexFiles = 100

// Spread is a table of n objects laid out the way a table that has seen
// many small appends looks: 10% manifests, 10% transaction files, 5%
// deletion files, 5% index files (in directories of up to 100 files) and
// the rest data files. Below 20 objects the proportions round to nothing,
// so a small table is one manifest and data files.
func Spread(n int) Shape {
	if n < 20 {
		return Shape{Manifests: min(n, 1), Data: max(n-1, 0)}
	}
	s := Shape{Manifests: n / 10, Transactions: n / 10, Deletions: n / 20, Indices: n / 20, IndexFiles: spreadIndexFiles}
	s.Data = n - s.Len()
	return s
}
