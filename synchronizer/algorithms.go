package synchronizer

import (
	"fmt"

	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/proc"
)

// MaxNodes bounds the family's runs: β and γ learn the whole graph first
// (about 2|E|·N messages, and N neighbour lists at every process), and
// flooding runs N−1 rounds.
const MaxNodes = 512

// Algorithms lists the family: α, β and γ, each running the flooding
// election (election.FloodMax, D = N−1 rounds) unchanged on an
// asynchronous network. Wrap another synchronous algorithm with NewAlpha,
// NewBeta or NewGamma.
var Algorithms = []proc.Algorithm{
	{
		Family:  "synchronizer",
		Name:    "alpha",
		Summary: "synchronizer α around flooding: SAFE to every neighbour once a round's messages are acknowledged; next round when all neighbours are safe (2|E| messages, 3 delays per round)",
		Source:  "Awerbuch 1985 (synchronizer α); Lynch 1996 ch. 16",
		New: func(id proc.ID, n int) proc.Process {
			return NewAlpha[election.FloodLeader](election.FloodMax(id, n, 0))
		},
		Messages: []proc.Message{Payload[election.FloodLeader]{}, Ack{}, Safe{}},
	},
	{
		Family:  "synchronizer",
		Name:    "beta",
		Summary: "synchronizer β around flooding: SAFE convergecast up a BFS tree, PULSE broadcast down it (2(N−1) messages, 2 + 2·depth delays per round)",
		Source:  "Awerbuch 1985 (synchronizer β); Lynch 1996 ch. 16",
		New: func(id proc.ID, n int) proc.Process {
			return NewBeta[election.FloodLeader](election.FloodMax(id, n, 0))
		},
		Messages: []proc.Message{Payload[election.FloodLeader]{}, Ack{}, Safe{}, Topo{}, Pulse{}},
	},
	GammaAlgorithm(DefaultK),
}

// GammaAlgorithm is the registry entry of synchronizer γ around flooding, with
// partition parameter k ≥ 2.
func GammaAlgorithm(k int) proc.Algorithm {
	a := proc.Algorithm{
		Family:  "synchronizer",
		Name:    "gamma",
		Summary: fmt.Sprintf("synchronizer γ (k=%d) around flooding: β inside clusters of height ≤ log_k N, α between clusters over preferred edges (O(kN) messages, O(log_k N) delays per round)", k),
		Source:  "Awerbuch 1985 (synchronizer γ); Lynch 1996 ch. 16",
		New: func(id proc.ID, n int) proc.Process {
			return NewGamma[election.FloodLeader](election.FloodMax(id, n, 0), k)
		},
		Messages: []proc.Message{Payload[election.FloodLeader]{}, Ack{}, Safe{}, Topo{}, Pulse{}, ClusterSafe{}, Ready{}},
	}
	complete(&a)
	return a
}

// Checks are the family's checkers: the election's, and the
// synchronizer's own.
var Checks = []string{"E1", "E2", "agreement", "sync-safe", "sync-rounds"}

// scenario: a 4×4 grid on an asynchronous network — exponential delays,
// no bound — and reordering channels.
const scenario = `nodes: 16
topology: grid
network:
  latency: exp:1ms
  reorder: 0.2
`

func init() {
	for i := range Algorithms {
		complete(&Algorithms[i])
	}
}

func complete(a *proc.Algorithm) {
	a.Assumes = proc.Assumptions{Reliable: true, Topology: "graph"}
	a.Validate = validate
	a.Checks = Checks
	a.Scenario = scenario
}

func validate(n int) error {
	if n > MaxNodes {
		return fmt.Errorf("at most %d processes (β and γ learn the whole graph first, flooding runs N−1 rounds)", MaxNodes)
	}
	return nil
}
