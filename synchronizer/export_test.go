package synchronizer

import "github.com/cohort-go/cohort/proc"

// NewHastyAlpha is a broken α that begins the next round once all its
// neighbours but one have said SAFE: the last one's messages may still be
// in flight.
func NewHastyAlpha[M proc.Message](app proc.Rounds) *Alpha[M] {
	a := NewAlpha[M](app)
	a.hasty = true
	return a
}

// Partition exposes the cluster partition: each process's cluster leader
// and tree parent, the number of clusters, the tallest tree's height and
// the preferred edges.
func Partition(adj [][]proc.ID, k int) (cluster, parent []proc.ID, clusters, height, preferred int) {
	l := partition(adj, k)
	return l.cluster, l.parent, l.clusters, l.height, l.nprefer
}
