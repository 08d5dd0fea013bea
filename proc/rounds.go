package proc

// Rounds is an algorithm written for the synchronous model (Lynch 1996
// ch. 2; Awerbuch 1985): computation proceeds in rounds 1, 2, 3 ..., and in
// round r every process first receives the messages its neighbours sent
// it in round r−1, then computes, then sends the messages of round r.
// Every message sent in a round arrives before the next round begins.
//
// A host drives Rounds: a timer host with bounded latency (election's
// flooding), or a synchronizer on an asynchronous network (package
// synchronizer) — the same Rounds value runs unchanged under either.
type Rounds interface {
	// Round runs round r (from 1) at this process. in holds the messages
	// sent to it in round r−1, by sender (none in round 1). It sends the
	// messages of round r with env.Send, to neighbours only, and reports
	// its observable acts with env.Output. It returns false when the
	// process has finished: it will send nothing more, and Round is not
	// called again.
	Round(env Env, r int, in []Received) bool
}

// Received is one message handed to a round: who sent it and what.
type Received struct {
	From ID
	M    Message
}
