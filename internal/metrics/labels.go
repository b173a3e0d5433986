package metrics

// Label values. Every method that takes a result, reason, state, op or code
// expects one of these; the series for each are created at zero by New so
// rate() and absent() work from the first scrape.

// Pass results (reaper_passes_total{result}), lease attempt results
// (reaper_lock_acquisitions_total{result}), purge failure reasons
// (reaper_purge_failures_total{reason}), skip reasons
// (reaper_skipped_total{reason}) and root refusal reasons
// (reaper_roots_refused_total{reason}) are the outcome package's values,
// verbatim: the same words as the audit ledger and the purge JSON.

// Table states for reaper_tables{root,state}.
const (
	StateLive          = "live"
	StateSoftDeleted   = "soft_deleted"
	StateDue           = "due"
	StateOverdue       = "overdue"
	StateOrphanMarker  = "orphan_marker"
	StateInvalidMarker = "invalid_marker"
	StateHeld          = "held"
)

// Store operations for reaper_objstore_requests_total{op,code} and
// reaper_objstore_request_duration_seconds{op}; also the span names of
// WrapStoreTracing ("objstore." + op).
const (
	OpList          = "list"
	OpWalk          = "walk"
	OpGet           = "get"
	OpHead          = "head"
	OpPut           = "put"
	OpPutIfAbsent   = "put_if_absent"
	OpPutIfMatch    = "put_if_match"
	OpDelete        = "delete"
	OpDeleteIfMatch = "delete_if_match"
	OpDeleteBatch   = "delete_batch"
	// OpPruneEmpty names PruneEmpty's span; it is not counted (see WrapStore).
	OpPruneEmpty = "prune_empty"
)

// Store result codes for reaper_objstore_requests_total{code}. Only
// CodeError is a failure: not-found and precondition answers are part of
// the protocol, and cancelled work is not a store fault.
const (
	CodeOK           = "ok"
	CodeNotFound     = "not_found"
	CodePrecondition = "precondition"
	CodeCanceled     = "canceled"
	CodeError        = "error"
)

var (
	tableStates = []string{StateLive, StateSoftDeleted, StateDue, StateOverdue, StateOrphanMarker, StateInvalidMarker, StateHeld}
	storeOps    = []string{OpList, OpWalk, OpGet, OpHead, OpPut, OpPutIfAbsent, OpPutIfMatch, OpDelete, OpDeleteIfMatch, OpDeleteBatch}
	storeCodes  = []string{CodeOK, CodeNotFound, CodePrecondition, CodeCanceled, CodeError}
)
