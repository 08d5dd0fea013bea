package rpc

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/proc"
)

// The server stub (Tanenbaum & van Steen §8.3.2; the duplicate table of
// Birrell & Nelson 1984 and of Liskov's at-most-once RPC):
//
//	On request(c, epoch, seq, sem, ack):
//	  epoch older than c's latest:  drop it (that incarnation is dead)
//	  at-least-once:                run the procedure, reply when done
//	  otherwise:                    forget c's calls up to ack;
//	    seq ≤ ack:                  drop it (the client has its answer)
//	    seq in the table:           running: drop it; done: resend the
//	                                stored reply; lost in a crash or
//	                                killed: reply with that error
//	    else:                       enter it, log it, sync; run the
//	                                procedure; when done store the reply,
//	                                log it, sync, send it
//	On request(..., key):           as at-most-once, in a table of keys
//	                                (not of a client's numbers): any
//	                                request naming the key gets the one
//	                                run's outcome, whoever sends it
//	On kill(c, old, seq):           kill that call if it runs; ack     [extermination]
//	On epoch(c, e):                 kill c's calls of older epochs; ack [reincarnation]
//	On renew(c, epoch, seq):        extend the call's lease           [expiration]
//	On a lease lapsing:             kill the call                     [expiration]
//	Under each remedy, a call named by a key is killed only when none of
//	its requests waits any more and no new one came for a lease: its
//	key's owner may resend it through another client
//
// The duplicate table lives on stable storage: a call's entry is synced
// before the procedure starts, its reply before it is sent. After a
// restart, an entry that was running when the server crashed is "lost": a
// retransmission gets ErrCrashed, never a second run. The table holds, per
// client, only the calls above the client's acknowledgement, and only of
// its latest epoch; the log is rewritten with just the table when it
// grows past Config.Compact.
//
// A host that runs the procedures itself (Config.Host) gets an Execute
// output where the simulator's host would let the work timer run, and
// answers with a Finished input; the stored reply then carries the
// procedure's result (its bytes are in the log's "F" record), so a
// retransmission after a restart gets the very result the first run
// returned.
//
// A call named by a key (Request.Key: a caller outside the cluster
// names its call, and may resend it through another client) has its
// entry in a second table, by key, logged and synced alike. No client
// acknowledges it (the key's owner is not a member), so that table is
// bounded instead by Config.Keys and Config.KeyBytes: the oldest ended
// calls are forgotten first, never one still running.
//
// Cost: a table entry per call in progress or unacknowledged; two synced
// log writes per at-most-once or maybe call.

// Server is the server stub.
type Server struct {
	cfg     Config
	peers   map[proc.ID]*peer
	running []*execution // in the order they began
	nexec   uint64       // executions begun by this incarnation

	keys     map[string]*keyed // the calls named by a key
	keyOrder []string          // their keys, oldest first
	keyBytes int               // the bytes of their keys and results

	// Group commit (Config.GroupCommit): a sync is under way (syncing)
	// and what waits for it (current); records were appended since it
	// began (dirty) and what waits for them (next), in order.
	syncing, dirty bool
	current, next  []func()

	// Broken variants, for the tests (the checkers catch them): volatile
	// keeps the duplicate table in memory only, so a restart forgets it;
	// noFilter runs every request, whatever its semantics.
	volatile, noFilter bool
}

// peer is what the server knows of one client.
type peer struct {
	epoch uint64            // the client's latest incarnation
	ack   uint64            // its calls up to ack are finished
	table map[uint64]*entry // its calls above ack (at-most-once, maybe)
}

type entryState uint8

const (
	running entryState = iota
	finished
	lost // the server crashed while it ran
	killed
)

type entry struct {
	state entryState
	reply Reply
}

// keyed is a call named by a key. waiting, in memory only, lists the
// requests to answer when it finishes.
type keyed struct {
	state   entryState
	data    []byte
	fail    string
	waiting []CallID
}

type execution struct {
	n       uint64 // this incarnation's number for it
	call    CallID
	sem     Semantics
	work    proc.TimerID
	lease   proc.TimerID
	tracked bool   // the duplicate table has its entry
	key     string // or the table of keys has it
	waiting bool   // not begun: its entry waits for a group commit
}

// Timer tags of the server.
type (
	workTimer   struct{ N uint64 }
	leaseTimer  struct{ N uint64 }
	syncedTimer struct{}
)

// NewServer returns a server stub; cfg's zero fields take their defaults.
func NewServer(cfg Config) *Server {
	return &Server{cfg: cfg.withDefaults(), peers: map[proc.ID]*peer{}, keys: map[string]*keyed{}}
}

func (s *Server) peer(c proc.ID) *peer {
	p := s.peers[c]
	if p == nil {
		p = &peer{table: map[uint64]*entry{}}
		s.peers[c] = p
	}
	return p
}

// see moves client c to epoch e if it is newer, forgetting the calls of
// older ones, and reports whether e is not older than c's latest.
func (p *peer) see(e uint64) bool {
	if e < p.epoch {
		return false
	}
	if e > p.epoch {
		p.epoch, p.ack = e, 0
		clear(p.table)
	}
	return true
}

// trim forgets the calls up to ack.
func (p *peer) trim(ack uint64) bool {
	if ack <= p.ack {
		return false
	}
	p.ack = ack
	for seq := range p.table {
		if seq <= ack {
			delete(p.table, seq)
		}
	}
	return true
}

// The log's records: "B c e s" (call c.e#s entered, about to run), "F c e
// s" (it finished; its reply is Result s), "K c e s" (killed), "A c e a"
// (client c's epoch e acknowledged up to a); for the calls named by a
// key, "R key" (entered), "D key" (finished, then 'd' and the data or
// 'f' and the error, as in "F") and "X key" (killed).

// Start recovers the duplicate table from stable storage.
func (s *Server) Start(env proc.Env) {
	st := s.storage(env)
	if st == nil {
		return
	}
	for _, rec := range st.Recovered() {
		if s.recoverKeyed(rec) {
			continue
		}
		var kind byte
		var c proc.ID
		var e, n uint64
		if k, _ := fmt.Sscanf(string(rec), "%c %d %d %d", &kind, &c, &e, &n); k < 4 {
			continue
		}
		p := s.peer(c)
		if !p.see(e) {
			continue
		}
		switch kind {
		case 'A':
			p.trim(n)
		case 'B':
			if n > p.ack {
				p.table[n] = &entry{state: running}
			}
		case 'F':
			if en := p.table[n]; en != nil {
				en.state, en.reply = finished, Reply{Epoch: e, Seq: n, Result: n}
				if f := bytes.SplitN(rec, []byte(" "), 5); len(f) == 5 && len(f[4]) > 0 {
					switch body := f[4][1:]; f[4][0] {
					case 'd':
						en.reply.Data = bytes.Clone(body)
					case 'f':
						en.reply.Fail = string(body)
					}
				}
			}
		case 'K':
			if en := p.table[n]; en != nil {
				en.state = killed
			}
		}
	}
	for _, c := range s.clients() {
		for _, en := range s.peers[c].table {
			if en.state == running {
				en.state = lost // it was running when this server crashed
			}
		}
	}
	for _, k := range s.keyOrder {
		if en := s.keys[k]; en.state == running {
			en.state = lost
		}
	}
}

// recoverKeyed replays a record of the table of keys, if rec is one.
func (s *Server) recoverKeyed(rec []byte) bool {
	f := bytes.SplitN(rec, []byte(" "), 3)
	if len(f) < 2 || len(f[0]) != 1 || !strings.Contains("RDX", string(f[0])) {
		return false
	}
	key := string(f[1])
	en := s.keys[key]
	switch f[0][0] {
	case 'R':
		if en == nil {
			s.enterKey(key)
		}
	case 'D':
		if en != nil && en.state == running {
			var body []byte
			if len(f) == 3 {
				body = f[2]
			}
			s.endKey(key, en, body)
		}
	case 'X':
		if en != nil {
			en.state = killed
		}
	}
	return true
}

// storage is the server's stable storage; nil for a volatile server.
func (s *Server) storage(env proc.Env) proc.Storage {
	if s.volatile {
		return nil
	}
	return env.Storage()
}

func (s *Server) clients() []proc.ID {
	cs := make([]proc.ID, 0, len(s.peers))
	for c := range s.peers {
		cs = append(cs, c)
	}
	slices.Sort(cs)
	return cs
}

// Input: a host that runs the procedures reports one finished
// (Finished); the server takes no other input.
func (s *Server) Input(env proc.Env, in proc.Input) {
	if f, ok := in.(Finished); ok && s.cfg.Host {
		if x := s.find(f.Exec); x != nil {
			s.finish(env, x, f.Data, f.Fail)
		}
	}
}

// Receive handles a request, a kill, an epoch or a renewal.
func (s *Server) Receive(env proc.Env, from proc.ID, m proc.Message) {
	switch m := m.(type) {
	case Request:
		s.onRequest(env, from, m)
	case Kill:
		s.onEpoch(env, from, m.Epoch)
		dead := CallID{Client: from, Epoch: m.Old, Seq: m.Seq}
		for _, x := range slices.Clone(s.running) {
			s.orphan(env, x, func(id CallID) bool { return id == dead })
		}
		env.Send(from, KillAck{Old: m.Old, Seq: m.Seq})
	case NewEpoch:
		s.onEpoch(env, from, m.Epoch)
		env.Send(from, EpochAck(m))
	case Renew:
		for _, x := range s.running {
			if s.requestedBy(x, CallID{Client: from, Epoch: m.Epoch, Seq: m.Seq}) && x.lease != 0 {
				env.CancelTimer(x.lease)
				x.lease = env.SetTimer(s.cfg.Lease, leaseTimer{x.n})
			}
		}
	}
}

// onEpoch learns client c's epoch e; under reincarnation it kills c's
// calls of older epochs.
func (s *Server) onEpoch(env proc.Env, c proc.ID, e uint64) {
	s.peer(c).see(e)
	if s.cfg.Orphans != Reincarnation {
		return
	}
	for _, x := range slices.Clone(s.running) {
		s.orphan(env, x, func(id CallID) bool { return id.Client == c && id.Epoch < e })
	}
}

// orphan kills x if the requests dead picks out were the ones it ran
// for: their clients rebooted. A call named by a key belongs to the
// key's owner, outside the cluster, who may resend it through another
// client: only those requests stop waiting for it, and once none waits
// it is given a lease (Config.Lease) for a resend to come before it is
// killed.
func (s *Server) orphan(env proc.Env, x *execution, dead func(CallID) bool) {
	en := s.keys[x.key]
	if x.key == "" || en == nil || en.state != running {
		if dead(x.call) {
			s.kill(env, x, "orphan")
		}
		return
	}
	n := len(en.waiting)
	en.waiting = slices.DeleteFunc(en.waiting, dead)
	if len(en.waiting) == 0 && n > 0 {
		env.CancelTimer(x.lease)
		x.lease = env.SetTimer(s.cfg.Lease, leaseTimer{x.n})
	}
}

// requestedBy reports whether request id waits for x.
func (s *Server) requestedBy(x *execution, id CallID) bool {
	if en := s.keys[x.key]; x.key != "" && en != nil {
		return slices.Contains(en.waiting, id)
	}
	return x.call == id
}

func (s *Server) onRequest(env proc.Env, from proc.ID, m Request) {
	p := s.peer(from)
	if m.Epoch > p.epoch && s.cfg.Orphans == Reincarnation {
		s.onEpoch(env, from, m.Epoch)
	}
	if !p.see(m.Epoch) {
		return
	}
	id := CallID{Client: from, Epoch: m.Epoch, Seq: m.Seq}
	if m.Key != "" && !s.noFilter {
		s.onKeyed(env, id, m)
		return
	}
	if m.Sem == AtLeastOnce || s.noFilter {
		s.run(env, id, m, false)
		return
	}
	st := s.storage(env)
	if p.trim(m.Ack) && st != nil {
		st.Append(fmt.Appendf(nil, "A %d %d %d", from, p.epoch, p.ack))
	}
	if m.Seq <= p.ack {
		return // the client has its answer already
	}
	if en := p.table[m.Seq]; en != nil {
		switch en.state {
		case finished:
			s.reply(env, from, en.reply)
		case lost:
			s.reply(env, from, Reply{Epoch: m.Epoch, Seq: m.Seq, Err: ErrCrashed})
		case killed:
			s.reply(env, from, Reply{Epoch: m.Epoch, Seq: m.Seq, Err: ErrKilled})
		}
		return // running: the reply will come
	}
	p.table[m.Seq] = &entry{state: running}
	if st != nil {
		st.Append(fmt.Appendf(nil, "B %d %d %d", from, m.Epoch, m.Seq))
		s.sync(env, st)
	}
	s.run(env, id, m, true)
}

// onKeyed handles request m of call id, named by the key m.Key: the
// first request runs it, any later one gets its outcome (or, while it
// runs, the reply when it ends).
func (s *Server) onKeyed(env proc.Env, id CallID, m Request) {
	if !ValidKey(m.Key) {
		return // a host checks its callers' keys: not a request of ours
	}
	en := s.keys[m.Key]
	if en == nil {
		en = s.enterKey(m.Key)
		en.waiting = []CallID{id}
		if st := s.storage(env); st != nil {
			st.Append(keyedRecord('R', m.Key, nil))
			s.sync(env, st)
		}
		s.run(env, id, m, false).key = m.Key
		return
	}
	switch en.state {
	case running:
		if !slices.Contains(en.waiting, id) {
			en.waiting = append(en.waiting, id)
		}
	case finished:
		s.reply(env, id.Client, Reply{Epoch: id.Epoch, Seq: id.Seq, Result: id.Seq, Data: en.data, Fail: en.fail})
	case lost:
		s.reply(env, id.Client, Reply{Epoch: id.Epoch, Seq: id.Seq, Err: ErrCrashed})
	case killed:
		s.reply(env, id.Client, Reply{Epoch: id.Epoch, Seq: id.Seq, Err: ErrKilled})
	}
}

// enterKey enters a running call named key, and forgets the oldest ended
// ones beyond the bounds.
func (s *Server) enterKey(key string) *keyed {
	en := &keyed{state: running}
	s.keys[key] = en
	s.keyOrder = append(s.keyOrder, key)
	s.keyBytes += len(key)
	s.forgetKeys()
	return en
}

// endKey records that the call named key finished with body ('d' and
// its data, or 'f' and its error; empty: no data).
func (s *Server) endKey(key string, en *keyed, body []byte) {
	en.state = finished
	if len(body) > 0 {
		switch body[0] {
		case 'd':
			en.data = bytes.Clone(body[1:])
		case 'f':
			en.fail = string(body[1:])
		}
	}
	s.keyBytes += len(en.data) + len(en.fail)
	s.forgetKeys()
}

// forgetKeys forgets the oldest ended calls named by keys while there are
// more than Config.Keys of them or their bytes pass Config.KeyBytes.
func (s *Server) forgetKeys() {
	for i := 0; i < len(s.keyOrder) && (len(s.keyOrder) > s.cfg.Keys || s.keyBytes > s.cfg.KeyBytes); {
		k := s.keyOrder[i]
		en := s.keys[k]
		if en.state == running {
			i++
			continue
		}
		s.keyBytes -= len(k) + len(en.data) + len(en.fail)
		delete(s.keys, k)
		s.keyOrder = slices.Delete(s.keyOrder, i, i+1)
	}
}

// run begins the procedure for call id, requested by m: a timer of
// m.Work stands for it, or the host runs it (Config.Host).
func (s *Server) run(env proc.Env, id CallID, m Request, inTable bool) *execution {
	s.nexec++
	x := &execution{n: s.nexec, call: id, sem: m.Sem, tracked: inTable, waiting: s.dirty || s.syncing}
	s.running = append(s.running, x)
	s.then(func() {
		if x.waiting && s.find(x.n) != x {
			return // killed while its entry was being synced
		}
		x.waiting = false
		env.Output(Executed{CallID: id, Sem: m.Sem})
		if s.cfg.Host {
			env.Output(Execute{CallID: id, Exec: x.n, Proc: m.Proc, Args: m.Args})
		} else {
			work := m.Work
			if work <= 0 {
				work = s.cfg.Work
			}
			x.work = env.SetTimer(work, workTimer{x.n})
		}
		if s.cfg.Orphans == Expiration {
			x.lease = env.SetTimer(s.cfg.Lease, leaseTimer{x.n})
		}
	})
	return x
}

// Timeout: a procedure finished, or a lease lapsed.
func (s *Server) Timeout(env proc.Env, tag any) {
	switch t := tag.(type) {
	case workTimer:
		if x := s.find(t.N); x != nil {
			s.finish(env, x, nil, "")
		}
	case leaseTimer:
		x := s.find(t.N)
		if x == nil {
			break
		}
		if en := s.keys[x.key]; x.key != "" && en != nil && len(en.waiting) > 0 && s.cfg.Orphans != Expiration {
			x.lease = 0 // a resend came: its requests wait for it again
			break
		}
		why := "lease"
		if s.cfg.Orphans != Expiration {
			why = "orphan"
		}
		s.kill(env, x, why)
	case syncedTimer:
		s.syncing = false
		s.release(&s.current)
		if st := s.storage(env); st != nil && s.compact(st) {
			s.dirty = false // the table, rewritten and synced, has all
			s.release(&s.next)
		}
		if s.dirty {
			s.startSync(env)
		}
	}
}

// sync makes the records given to the log durable before the server
// does anything that depends on them (then): at once, or, under
// Config.GroupCommit, in the background, while the server handles the
// requests and results that arrive meanwhile; their records then share
// the next sync (group commit: DeWitt et al. 1984; Gray & Reuter §9.4.7).
//
// A sync is made at once all the same when the storage cannot sync in
// the background (proc.BackgroundSyncer: memory, the simulator's), or
// no other call is under way: there is nobody to share it with, and the
// background costs a hand-off.
func (s *Server) sync(env proc.Env, st proc.Storage) {
	_, bg := st.(proc.BackgroundSyncer)
	if !s.cfg.GroupCommit || !bg || !s.syncing && len(s.running) == 0 {
		st.Sync()
		return
	}
	s.dirty = true
	if !s.syncing {
		s.startSync(env)
	}
}

// startSync begins the sync of every record appended so far; what waits
// for them waits for it.
func (s *Server) startSync(env proc.Env) {
	s.syncing, s.dirty = true, false
	s.current, s.next = s.next, nil
	proc.SyncThen(env, s.storage(env), syncedTimer{})
}

// then does f once the records appended so far are durable: now, or
// after the sync that covers them.
func (s *Server) then(f func()) {
	switch {
	case s.dirty:
		s.next = append(s.next, f)
	case s.syncing:
		s.current = append(s.current, f)
	default:
		f()
	}
}

// release does what waited for a sync, in order.
func (s *Server) release(fs *[]func()) {
	later := *fs
	*fs = nil
	for _, f := range later {
		f()
	}
}

// reply sends r to client c once what it may depend on is durable.
func (s *Server) reply(env proc.Env, c proc.ID, r Reply) {
	s.then(func() { env.Send(c, r) })
}

// compactNow compacts the log after a sync, unless under group commit
// (which compacts between its syncs).
func (s *Server) compactNow(st proc.Storage) {
	if !s.cfg.GroupCommit {
		s.compact(st)
	}
}

func (s *Server) find(n uint64) *execution {
	i := slices.IndexFunc(s.running, func(x *execution) bool { return x.n == n })
	if i < 0 {
		return nil
	}
	return s.running[i]
}

func (s *Server) remove(x *execution) {
	s.running = slices.DeleteFunc(s.running, func(y *execution) bool { return y == x })
}

// finish ends the procedure, which returned data or failed with fail:
// store the reply (at-most-once, maybe), then send it.
func (s *Server) finish(env proc.Env, x *execution, data []byte, fail string) {
	s.remove(x)
	env.CancelTimer(x.lease)
	env.Output(Done{CallID: x.call})
	reply := Reply{Epoch: x.call.Epoch, Seq: x.call.Seq, Result: x.call.Seq, Data: data, Fail: fail}
	if en := s.keys[x.key]; x.key != "" {
		if en == nil || en.state != running {
			return
		}
		s.endKey(x.key, en, outcome(data, fail))
		if st := s.storage(env); st != nil {
			st.Append(keyedRecord('D', x.key, outcome(data, fail)))
			s.sync(env, st)
			s.compactNow(st)
		}
		for _, w := range en.waiting {
			s.reply(env, w.Client, Reply{Epoch: w.Epoch, Seq: w.Seq, Result: w.Seq, Data: data, Fail: fail})
		}
		en.waiting = nil
		return
	}
	if x.tracked {
		p := s.peer(x.call.Client)
		en := p.table[x.call.Seq]
		if p.epoch != x.call.Epoch || en == nil {
			return // the client has moved on: nobody waits for the reply
		}
		en.state, en.reply = finished, reply
		if st := s.storage(env); st != nil {
			st.Append(finishedRecord(x.call.Client, x.call.Epoch, x.call.Seq, reply))
			s.sync(env, st)
			s.compactNow(st)
		}
	}
	s.reply(env, x.call.Client, reply)
}

// kill stops a running procedure.
func (s *Server) kill(env proc.Env, x *execution, why string) {
	s.remove(x)
	if !x.waiting { // one that had not begun stops without ever running
		env.CancelTimer(x.work)
		env.CancelTimer(x.lease)
		k := Killed{CallID: x.call, Why: why}
		if s.cfg.Host {
			k.Exec = x.n
		}
		env.Output(k)
	}
	if en := s.keys[x.key]; x.key != "" {
		if en != nil && en.state == running {
			en.state, en.waiting = killed, nil
			if st := s.storage(env); st != nil {
				st.Append(keyedRecord('X', x.key, nil))
			}
		}
		return
	}
	p := s.peer(x.call.Client)
	if en := p.table[x.call.Seq]; x.tracked && en != nil && p.epoch == x.call.Epoch {
		en.state = killed
		if st := s.storage(env); st != nil {
			st.Append(fmt.Appendf(nil, "K %d %d %d", x.call.Client, x.call.Epoch, x.call.Seq))
		}
	}
}

// compact rewrites the log with the table alone once it is too long,
// and reports whether it did.
func (s *Server) compact(st proc.Storage) bool {
	if st.Size() <= s.cfg.Compact {
		return false
	}
	var recs [][]byte
	for _, c := range s.clients() {
		p := s.peers[c]
		recs = append(recs, fmt.Appendf(nil, "A %d %d %d", c, p.epoch, p.ack))
		seqs := make([]uint64, 0, len(p.table))
		for seq := range p.table {
			seqs = append(seqs, seq)
		}
		slices.Sort(seqs)
		for _, seq := range seqs {
			recs = append(recs, fmt.Appendf(nil, "B %d %d %d", c, p.epoch, seq))
			switch p.table[seq].state {
			case finished:
				recs = append(recs, finishedRecord(c, p.epoch, seq, p.table[seq].reply))
			case killed:
				recs = append(recs, fmt.Appendf(nil, "K %d %d %d", c, p.epoch, seq))
			}
		}
	}
	for _, k := range s.keyOrder {
		recs = append(recs, keyedRecord('R', k, nil))
		switch en := s.keys[k]; en.state {
		case finished:
			recs = append(recs, keyedRecord('D', k, outcome(en.data, en.fail)))
		case killed:
			recs = append(recs, keyedRecord('X', k, nil))
		}
	}
	st.Replace(recs)
	st.Sync()
	return true
}

// finishedRecord is the log record of a finished call: "F c e s", then,
// if the host ran the procedure, a space and 'd' and the bytes it
// returned, or 'f' and its error.
func finishedRecord(c proc.ID, e, seq uint64, r Reply) []byte {
	rec := fmt.Appendf(nil, "F %d %d %d", c, e, seq)
	if o := outcome(r.Data, r.Fail); o != nil {
		rec = append(append(rec, ' '), o...)
	}
	return rec
}

// outcome is how a log record carries a procedure's outcome: 'f' and its
// error, or 'd' and the bytes it returned, or nothing.
func outcome(data []byte, fail string) []byte {
	switch {
	case fail != "":
		return append([]byte{'f'}, fail...)
	case len(data) > 0:
		return append([]byte{'d'}, data...)
	}
	return nil
}

// keyedRecord is a record of the table of keys: kind, the key, and the
// outcome if any.
func keyedRecord(kind byte, key string, o []byte) []byte {
	rec := append([]byte{kind, ' '}, key...)
	if o != nil {
		rec = append(append(rec, ' '), o...)
	}
	return rec
}

// TableSize is the number of calls the duplicate table holds (for tests
// of its bound).
func (s *Server) TableSize() int {
	n := len(s.keys)
	for _, p := range s.peers {
		n += len(p.table)
	}
	return n
}
