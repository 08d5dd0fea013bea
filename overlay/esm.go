package overlay

import "time"

// ESM bounds (the algorithm follows).
const (
	ESMDeliveryBound = time.Second
	ESMRepairBound   = 5 * time.Second
	ESMJoinBound     = time.Second
)
