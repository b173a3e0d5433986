package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lance-reaper/reaper/internal/objstore"
)

// writtenAfterDrop is the fix status gives for a due table a writer wrote
// into after its drop: every purge skips it as a conflict until then.
const writtenAfterDropFix = "every purge skips it as a conflict and deletes nothing: if an application uses the table, revive it ('reaper revive'); if not, stop the writer, revive it and drop it again"

// noteWriteAfterDrop sets Problem on a due soft-deleted table whose
// _versions/ holds a manifest the identity fence refuses: LanceDB wrote into
// it after its drop (today's LanceDB does not read markers), so every pass
// skips it as a conflict, and status is where an operator finds that out.
// It lists _versions/ of due tables only (one request each; a pass walks
// them anyway); a purge checks every file, so a write that left data and no
// manifest shows only there. now is the store's clock; other tables are
// left as they are.
func (ns *Namespace) noteWriteAfterDrop(ctx context.Context, s *TableStatus, now time.Time) error {
	if s.State != StateSoftDeleted || s.Marker == nil || !s.Due(now) || s.Problem != "" {
		return nil
	}
	fence := ns.fence(*s.Marker, objstore.Object{LastModified: s.MarkerModified})
	var found error
	err := ns.store.List(ctx, TableDir(s.Name)+versionsDir+"/", func(p objstore.Page) error {
		for _, o := range p.Objects {
			if err := fence(o); err != nil {
				found = err
				return errStop
			}
		}
		return nil
	})
	switch {
	case found != nil:
		var ce *ConflictError
		if errors.As(found, &ce) {
			s.Problem = fmt.Sprintf("written after its drop: %s; %s", ce.Reason, writtenAfterDropFix)
		}
		return nil
	case err != nil && !errors.Is(err, errStop):
		return fmt.Errorf("list %s%s/: %w", TableDir(s.Name), versionsDir, err)
	}
	return nil
}
