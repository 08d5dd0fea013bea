package overlay

import (
	"math"

	"github.com/cohort-go/cohort/proc"
)

// circular is the baseline the structured overlays improve on: routing
// along the ring with the leaf set alone (Coulouris et al. §10.5.1,
// "Circular routing alone is correct but inefficient"; Rowstron &
// Druschel 2001 §2.3). A message whose key lies within the leaf set's
// range goes to the numerically closest leaf (or stays); otherwise it
// goes to the farthest leaf on the shorter side of the ring, l nodes
// closer. Cost: about N/(4l) hops on average (a key is N/4 nodes away on
// average, l nodes a hop), state 2l. The join is Pastry's, with this
// routing: X's leaf set comes from Z.
type circular struct{}

func init() {
	register(proc.Algorithm{
		Name:    "circular",
		Summary: "circular routing with the leaf set alone: the correct but inefficient baseline",
		Source:  "Coulouris et al. §10.5.1; Rowstron & Druschel 2001",
		Assumes: proc.Assumptions{Reliable: true, Failures: "crash-stop", Topology: "full", Joins: true},
		New:     func(id proc.ID, _ int) proc.Process { return NewCircular(id, Repairing) },
		Checks:  []string{"overlay-lookup", "overlay-tables", "dht-get"},
		Theory: func(n int) map[string]float64 {
			return map[string]float64{
				"hops_mean":              math.Max(0, float64(n)/(4*DefaultLeaves)),
				"state_entries_per_node": float64(min(n-1, 2*DefaultLeaves)),
			}
		},
		Notes: map[string]string{
			"hops_mean": "N/4l: a key is a quarter of the ring away on average, and a hop covers l nodes",
		},
	})
}

// NewCircular is a circular-routing node at address id.
func NewCircular(id proc.ID, cfg Config) proc.Process { return newNode(id, cfg, circular{}) }

func (circular) learn(*node, proc.ID, GUID) bool           { return false }
func (circular) nodes(*node) []proc.ID                     { return nil }
func (circular) forget(*node, proc.ID) (p, d int, ok bool) { return 0, 0, false }
func (circular) row(dst []proc.ID, _ int) []proc.ID        { return dst }
func (circular) entry(int, int) proc.ID                    { return proc.None }

func (circular) next(n *node, key GUID) proc.ID {
	s := &n.leaves
	if s.covers(key) {
		return s.closest(n.id, key)
	}
	// The farthest leaf on the key's side; if failures have emptied that
	// side (l adjacent nodes failed), the node knows nobody closer that
	// way and takes delivery.
	side := s.right
	if Cmp(Clockwise(n.self, key), Clockwise(key, n.self)) > 0 {
		side = s.left
	}
	if len(side) == 0 {
		return n.id
	}
	return side[len(side)-1]
}
