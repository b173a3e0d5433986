package roots

import (
	"github.com/lance-reaper/reaper/internal/config"
	"github.com/lance-reaper/reaper/internal/lifecycle"
)

// Root is one root of a pass: where it is, and, for a root discovery
// found, what discovery read of it in this pass. The configuration says
// where roots are (config.Root); a Root is what a pass works on.
type Root struct {
	// URI is canonical (objstore.Location.String).
	URI string
	// StorageOptions are the options of the URI's backend: the configured
	// root's, or the discover pattern's.
	StorageOptions map[string]string
	// Retention is the configured root's or the discover pattern's own
	// retention keys (config.Config.RetentionFor applies them).
	Retention config.RetentionOverride
	// Listing is discovery's listing of the root in this pass: the pass
	// plans from it instead of listing the root again
	// (lifecycle/listing.go). Nil for a configured root, and for a
	// discovered one discovery did not carry (maxCarriedNames).
	Listing *lifecycle.Listing
}
