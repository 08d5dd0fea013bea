// Package position holds the positioning systems of Tanenbaum & van Steen
// §6.4: GPS, which finds a receiver's place and clock error from
// satellites' positions and timestamps, and network coordinates, which give
// every node of a wide-area system a point in a space whose distances
// predict round-trip times — with landmarks (GNP) or without (Vivaldi).
//
// Large systems care where their nodes are: to build an overlay of near
// neighbours, to send a client to a close replica, to place replicas, to
// route by position. Measuring every pair of N nodes costs N² probes;
// coordinates cost O(N) and predict the rest.
//
//   - Locate solves GPS's four equations (position and receiver clock bias)
//     by Gauss–Newton; NewGPSScenario makes a synthetic sky to solve, and
//     GPSErrorVsNoise shows how timestamp errors become metres.
//   - SyntheticLatency draws an Internet-like latency matrix: clustered
//     nodes on a plane, an access delay per node, noise and detours.
//   - EmbedGNP embeds landmarks, then every host from its times to them.
//   - Vivaldi relaxes a system of springs, one sample per node per round,
//     with the adaptive timestep and, optionally, height vectors.
//   - Evaluate measures predictions against the matrix: the median and
//     90th percentile of |predicted − actual| / actual.
//
// Everything is deterministic: randomness comes from seeded generators in
// the configurations, never from the clock; the same configuration gives
// the same numbers. Units: metres and seconds for GPS, milliseconds of
// round-trip time for network coordinates.
package position
