package overlay

import "github.com/cohort-go/cohort/proc"

// noLeaves is Pastry routing that ignores the leaf set: the routing table
// alone, delivering where its entry is empty. Prefix routing gets a key
// near its home, but only the leaf set finds the numerically closest node:
// keys are delivered at a node that merely shares the longest prefix.
type noLeaves struct{ pastry }

func (r *noLeaves) next(n *node, key GUID) proc.ID {
	p := SharedPrefix(key, n.self)
	if p == Digits {
		return n.id
	}
	if t := r.entry(p, key.Digit(p)); t != proc.None {
		return t
	}
	return n.id
}

// NewNoLeaves is a node of the broken variant, for the checker to catch.
func NewNoLeaves(id proc.ID, _ int) proc.Process { return newNode(id, FailureFree, &noLeaves{}) }

// The broken variants of the failure handling and the DHT, for the
// checkers to catch: Pastry with configuration cfg and one flaw.
var (
	KeepsDeadEntries  = flawed(keepsDeadEntries)
	NoLeafRepair      = flawed(noLeafRepair)
	DeliversOnTimeout = flawed(deliversOnTimeout)
	NoReplicas        = flawed(noReplicas)
	ScribeTwice       = flawed(scribeTwice)
	ScribeNoRepair    = flawed(scribeNoRepair)
	ScribeNoHandover  = flawed(scribeNoHandover)
	JoinsBlind        = flawed(joinsBlind)
)

func flawed(f flaw) func(Config) func(proc.ID, int) proc.Process {
	return func(cfg Config) func(proc.ID, int) proc.Process {
		return func(id proc.ID, _ int) proc.Process {
			n := newPastryNode(id, cfg)
			n.flaw = f
			return n
		}
	}
}

// PicksDescendant is ESM that may take a descendant as its parent.
func PicksDescendant(cfg ESMConfig) func(proc.ID, int) proc.Process {
	return esmFlawed(cfg, picksDescendant)
}

// StalePaths is ESM whose nodes never refresh the path their parent gave
// them on accepting: after an ancestor's switch, every path below it is
// out of date, as a path is for a few latencies after any switch.
func StalePaths(cfg ESMConfig) func(proc.ID, int) proc.Process {
	return esmFlawed(cfg, stalePaths)
}

// StalePathsRejoinsBlind is StalePaths whose candidates adopt an orphan
// on the paths they know, without a climb to the source.
func StalePathsRejoinsBlind(cfg ESMConfig) func(proc.ID, int) proc.Process {
	return esmFlawed(cfg, stalePaths, rejoinsBlind)
}

func esmFlawed(cfg ESMConfig, fs ...flaw) func(proc.ID, int) proc.Process {
	return func(id proc.ID, _ int) proc.Process {
		n := NewESM(id, cfg).(*esm)
		n.flaws = fs
		return n
	}
}

// SwitchGivesUp is ESM whose switches wait ESMProbe for the candidate's
// answer and, refused or unanswered, keep the parent until the next
// period.
func SwitchGivesUp(cfg ESMConfig) func(proc.ID, int) proc.Process {
	return esmFlawed(cfg, switchGivesUp)
}

// KeepsPlaces is ESM without displacement: a host keeps its place below
// its parent whatever a host asking for it could forward.
func KeepsPlaces(cfg ESMConfig) func(proc.ID, int) proc.Process {
	return esmFlawed(cfg, keepsPlaces)
}
