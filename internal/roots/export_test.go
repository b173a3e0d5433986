package roots

// ExpandWithBudget is Expand carrying listings of at most budget names in
// all (Expand's is maxCarriedNames).
var ExpandWithBudget = expand
