// Package epidemic holds Cohort's epidemic (gossip) protocols as state
// machines: anti-entropy over a versioned key-value map by push, pull and
// push-pull; rumor mongering with the variants of Demers et al.;
// push-sum aggregation; SWIM membership and failure detection with
// Lifeguard's refinements (swim.go); and resource discovery on the
// replicated map, nearest holders first by Vivaldi coordinates
// (discovery.go).
//
// The sources are Demers, Greene, Hauser, Irish, Larson, Shenker, Sturgis,
// Swinehart and Terry, "Epidemic algorithms for replicated database
// maintenance" (PODC 1987), for anti-entropy, rumor mongering, their
// variants and death certificates; Kempe, Dobra and Gehrke, "Gossip-based
// computation of aggregate information" (FOCS 2003), for push-sum; and
// Tanenbaum & van Steen §4.5 (gossip-based communication) for the
// susceptible / infective / removed vocabulary and the round analysis:
//
//   - a round is the period in which every node has exchanged with at
//     least one node chosen at random;
//   - with pᵢ the fraction of nodes still susceptible after round i, pull
//     gives pᵢ₊₁ = pᵢ² and push pᵢ₊₁ = pᵢ(1 − 1/n)^{n(1−pᵢ)} ≈ pᵢ/e;
//   - with fanout f, about log_{f+1}(n) + ln(n)/f + O(1) rounds reach
//     every node;
//   - rumor mongering in which an infective node that contacts a node
//     already infected loses interest with probability 1/k leaves a
//     residue s of never-infected nodes with s = e^{−(k+1)(1−s)}.
//
// # The contract every algorithm keeps
//
// Rounds are driven by a periodic timer per node on its local clock
// (Params.Period). Peers are drawn uniformly from the run's whole ID space
// 0 .. N−1 with Env.Rand: every node knows every other's name, as Demers
// et al. assume; a message to an absent or crashed node is simply lost,
// which costs the sender that contact and nothing else.
//
// The replicated map is changed by the Put and Delete inputs. A write
// takes a version above every version the node has seen for the key,
// with the writer's ID in the low bits (Version), so versions are
// totally ordered and the newest wins everywhere. A deletion is a
// versioned tombstone (Demers et al.'s death certificate), dropped when it
// is Params.ReapAfter old, counted from its writing.
// Every adoption of a newer entry is output as Applied, every dropped
// tombstone as Reaped; the checkers in package check judge convergence and
// resurrection by these outputs alone.
//
// Push-sum outputs State after every change of its (sum, weight) pair;
// the checkers follow the mass through those outputs and the labels of
// the Share messages.
//
// SWIM (Das, Gupta and Motivala, DSN 2002; with Dadgar, Phillips and
// Currey's Lifeguard, 2018) outputs Suspect, Dead and Alive at the member
// that comes to hold each fact about another; check's swim-completeness
// and swim-accuracy judge who was declared dead, by whom and when.
//
// Resource discovery takes Advertise, Withdraw and Find inputs and
// outputs Found, the holders nearest first; check's discovery-findable
// and discovery-fresh judge each node's last answers against the
// advertisements, withdrawals and crashes of the trace.
package epidemic
