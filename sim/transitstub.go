package sim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// TransitStub is a physical network of the transit-stub kind (Zegura,
// Calvert & Bhattacharjee, "How to model an internetwork", INFOCOM 1996;
// the GT-ITM topologies Pastry, Scribe and Narada were measured on):
// a few transit domains of routers joined by long links, stub domains of
// routers hanging off transit routers, and the hosts — the overlay's
// nodes — each on a stub router. The latency between two hosts is the
// sum of the link latencies along the shortest path between them; a
// message's path crosses those physical links, so the copies of a
// multicast on each link (its stress) can be counted. Everything is
// drawn from the seed.
type TransitStub struct {
	hosts   int
	routers int
	at      []int32         // the stub router of each host
	access  []time.Duration // each host's link to its router
	upload  []float64       // each host's upload capacity, Mbit/s
	dist    [][]time.Duration
	prev    [][]int32 // prev[s][r]: r's predecessor on the shortest path from s
}

// The generator's shape: transit domains of TransitRouters routers, one
// stub domain of StubRouters routers for every HostsPerStub hosts.
const (
	TransitDomains = 4
	TransitRouters = 4
	StubRouters    = 3
	HostsPerStub   = 8
)

// MaxTransitStubHosts bounds the hosts of a TransitStub: it holds the
// latency between every two routers, and a run of so many hosts measures
// every member's path.
const MaxTransitStubHosts = 1024

type tsEdge struct {
	to  int32
	lat time.Duration
}

// NewTransitStub draws a transit-stub network for hosts hosts with the
// seed: latencies within a transit domain uniform in 10–30 ms, between
// transit domains 30–60 ms, from a stub domain to its transit router
// 5–15 ms, within a stub domain 1–5 ms, and 1–5 ms from a host to its
// router.
func NewTransitStub(hosts int, seed uint64) *TransitStub {
	rng := rand.New(rand.NewPCG(seed, 0x74737562))
	uni := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)).Round(100*time.Microsecond)
	}
	nt := TransitDomains * TransitRouters
	stubs := max(1, (hosts+HostsPerStub-1)/HostsPerStub)
	nr := nt + stubs*StubRouters
	adj := make([][]tsEdge, nr)
	link := func(a, b int, lat time.Duration) {
		adj[a] = append(adj[a], tsEdge{int32(b), lat})
		adj[b] = append(adj[b], tsEdge{int32(a), lat})
	}
	for d := range TransitDomains {
		base := d * TransitRouters
		for i := range TransitRouters { // a ring in each domain, and one chord
			link(base+i, base+(i+1)%TransitRouters, uni(10*time.Millisecond, 30*time.Millisecond))
		}
		link(base, base+TransitRouters/2, uni(10*time.Millisecond, 30*time.Millisecond))
		for e := d + 1; e < TransitDomains; e++ { // every pair of domains joined once
			link(base+rng.IntN(TransitRouters), e*TransitRouters+rng.IntN(TransitRouters), uni(30*time.Millisecond, 60*time.Millisecond))
		}
	}
	for s := range stubs {
		base := nt + s*StubRouters
		for i := 1; i < StubRouters; i++ { // a star around the gateway
			link(base, base+i, uni(time.Millisecond, 5*time.Millisecond))
		}
		link(base, rng.IntN(nt), uni(5*time.Millisecond, 15*time.Millisecond))
	}
	ts := &TransitStub{hosts: hosts, routers: nr, at: make([]int32, hosts), access: make([]time.Duration, hosts)}
	for h := range hosts {
		ts.at[h] = int32(nt + rng.IntN(stubs)*StubRouters + rng.IntN(StubRouters))
		ts.access[h] = uni(time.Millisecond, 5*time.Millisecond)
	}
	// The uploads are drawn from a stream of their own: the latencies
	// stay those of the same seed without them.
	up := rand.New(rand.NewPCG(seed, 0x75706c64))
	ts.upload = make([]float64, hosts)
	for h := range ts.upload {
		ts.upload[h] = Uploads[up.IntN(len(Uploads))]
	}
	ts.dist, ts.prev = make([][]time.Duration, nr), make([][]int32, nr)
	for s := range nr {
		ts.dist[s], ts.prev[s] = dijkstra(adj, s)
	}
	return ts
}

// dijkstra is the shortest paths from s (the graphs are small: a scan for
// the nearest suffices).
func dijkstra(adj [][]tsEdge, s int) ([]time.Duration, []int32) {
	const inf = time.Duration(1 << 62)
	dist, prev, done := make([]time.Duration, len(adj)), make([]int32, len(adj)), make([]bool, len(adj))
	for i := range dist {
		dist[i], prev[i] = inf, -1
	}
	dist[s] = 0
	for range adj {
		u := -1
		for i := range adj {
			if !done[i] && dist[i] < inf && (u < 0 || dist[i] < dist[u]) {
				u = i
			}
		}
		if u < 0 {
			break
		}
		done[u] = true
		for _, e := range adj[u] {
			if d := dist[u] + e.lat; d < dist[e.to] {
				dist[e.to], prev[e.to] = d, int32(u)
			}
		}
	}
	return dist, prev
}

// Uploads are the hosts' upload capacities in Mbit/s, drawn in equal
// shares: the asymmetric access links of home hosts (DSL, cable) beside
// well-connected ones, the heterogeneity a tree for a stream must work
// around (an end host's upload, not the core, is the bottleneck).
var Uploads = []float64{0.5, 1, 2, 10}

// Upload is host h's upload capacity in Mbit/s (its access link out).
func (ts *TransitStub) Upload(h proc.ID) float64 { return ts.upload[h] }

// Hosts is the number of hosts.
func (ts *TransitStub) Hosts() int { return ts.hosts }

// Latency is the one-way latency from host a to host b.
func (ts *TransitStub) Latency(a, b proc.ID) time.Duration {
	if a == b {
		return 0
	}
	return ts.access[a] + ts.dist[ts.at[a]][ts.at[b]] + ts.access[b]
}

// MaxLatency is the largest latency between two hosts.
func (ts *TransitStub) MaxLatency() time.Duration {
	var m time.Duration
	for a := range ts.hosts {
		for b := range ts.hosts {
			m = max(m, ts.Latency(proc.ID(a), proc.ID(b)))
		}
	}
	return m
}

// String describes the network (sim.PairLatency).
func (ts *TransitStub) String() string {
	return fmt.Sprintf("transit-stub: %d hosts, %d routers", ts.hosts, ts.routers)
}

// PhysLink is an undirected physical link: two vertices, routers
// numbered from 0, hosts after them.
type PhysLink struct{ A, B int32 }

// Path is the physical links a message from host a to host b crosses.
func (ts *TransitStub) Path(a, b proc.ID) []PhysLink {
	if a == b {
		return nil
	}
	host := func(h proc.ID) int32 { return int32(ts.routers) + int32(h) }
	mk := func(x, y int32) PhysLink { return PhysLink{min(x, y), max(x, y)} }
	ra, rb := ts.at[a], ts.at[b]
	ls := []PhysLink{mk(host(a), ra)}
	var mid []PhysLink
	for r := rb; r != ra; r = ts.prev[ra][r] {
		mid = append(mid, mk(ts.prev[ra][r], r))
	}
	slices.Reverse(mid)
	return append(append(ls, mid...), mk(rb, host(b)))
}

// Hop is an overlay hop: a message sent From one host To another.
type Hop struct{ From, To proc.ID }

// TreeCost is what a multicast costs on a physical network: the most
// and the mean copies of one packet on a physical link (its stress, over
// the links that carry it at all; Chu, Rao & Zhang 2000), and, per
// member, its relative delay penalty (RDP): the delay along the overlay
// over the direct unicast latency from the source.
type TreeCost struct {
	StressMax  int
	StressMean float64
	RDP        []float64
}

// Cost measures a multicast from src whose packet takes the overlay hops
// given, reaching each member along them.
func (ts *TransitStub) Cost(src proc.ID, hops []Hop, members []proc.ID) TreeCost {
	var c TreeCost
	copies := map[PhysLink]int{}
	delay := map[proc.ID]time.Duration{src: 0}
	pending := slices.Clone(hops)
	for len(pending) > 0 { // delays from src, hop by hop: the hops form a tree
		var rest []Hop
		for _, h := range pending {
			if d, ok := delay[h.From]; ok {
				if _, seen := delay[h.To]; !seen {
					delay[h.To] = d + ts.Latency(h.From, h.To)
				}
			} else {
				rest = append(rest, h)
			}
		}
		if len(rest) == len(pending) {
			break // hops not reachable from src
		}
		pending = rest
	}
	for _, h := range hops {
		for _, l := range ts.Path(h.From, h.To) {
			copies[l]++
		}
	}
	sum := 0
	for _, k := range copies {
		c.StressMax = max(c.StressMax, k)
		sum += k
	}
	if len(copies) > 0 {
		c.StressMean = float64(sum) / float64(len(copies))
	}
	for _, m := range members {
		if d, ok := delay[m]; ok && m != src {
			c.RDP = append(c.RDP, float64(d)/float64(ts.Latency(src, m)))
		}
	}
	slices.SortFunc(c.RDP, cmp.Compare)
	return c
}

// Unicast is the naive alternative: the source sends each member its own
// copy.
func Unicast(src proc.ID, members []proc.ID) []Hop {
	var hs []Hop
	for _, m := range members {
		if m != src {
			hs = append(hs, Hop{src, m})
		}
	}
	return hs
}
