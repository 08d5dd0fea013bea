// Package ntp speaks the Network Time Protocol on the wire: the NTPv4
// packet (RFC 5905), a server that answers clients with its clock, and an
// SNTP client (RFC 4330) that measures how far a server's clock is from its
// own. It interoperates with chrony both ways: the tests query a chronyd
// server, and have chronyd query a Cohort server.
//
// # Offset and delay
//
// The exchange of Cristian's algorithm and NTP (Tanenbaum and van Steen,
// "Distributed Systems", §6.1; RFC 5905 §8): the client sends a request
// at T1 by its own clock; the server receives it at T2 and answers at T3
// by the server's clock; the client receives the answer at T4:
//
//	offset θ = ((T2−T1) + (T3−T4)) / 2
//	delay  δ = (T4−T1) − (T3−T2)
//
// δ is the round trip less the time the server held the request, as RFC
// 5905 and chrony define and report it; the textbook's one-way estimate is
// δ/2 (Sample.OneWay). θ is the server's clock minus the client's, exact
// when the request and the answer take equally long; an asymmetry between
// the two legs puts θ off by up to δ/2. So from several samples NTP keeps
// the θ of the least δ. For example, T1 = 10.000, T2 = 10.503, T3 = 10.504
// and T4 = 10.007 (seconds) give θ = (0.503 + 0.497)/2 = 0.500 and
// δ = 0.007 − 0.001 = 0.006: the server is half a second ahead, 3 ms away
// each way.
//
// # Packets and timestamps
//
// Packet is the 48-byte header; Decode and Encode convert it, and their
// errors name the field at fault. Timestamp is the 64-bit NTP timestamp
// (seconds since 1900 in 136-year eras, and a binary fraction); Time and
// TimestampOf convert it from and to time.Time, resolving the era against
// a nearby time, and Sub subtracts two without needing their eras.
//
// # Server and client
//
// Server answers mode-3 requests with mode-4 replies; it drops and counts
// anything else (Stats), and it stops with its context. It is not
// synchronised to a reference, and says so the traditional way: stratum
// 10, reference id "LOCL" (see DefaultStratum).
//
// Client.Query sends requests, matches each reply to its request by a
// random 64-bit transmit timestamp that the reply must echo, checks the
// reply (server mode, a transmit time, not unsynchronised, not a
// kiss-o'-death) and returns θ and δ of the best sample.
package ntp
