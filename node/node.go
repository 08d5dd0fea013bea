// Package node assembles a live Cohort node: the live host (package live)
// on a transport, the services — locks, elections, groups, and any
// algorithm named to run at boot — and their HTTP API behind one
// bearer-token check. `cohort node` and `cohort cluster up` are built on
// it; so can any Go program.
//
//	n, err := node.New(node.Config{ID: 0, N: 3, Transport: tr, Lock: ra, Group: seq, Token: tok})
//	defer n.Close()
//	http.Serve(ln, n.Handler())
//
// A service for a new family is one package (its Server and Resolver) and
// one line in each of New's resolver list and Handler's route list.
package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/dht"
	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/epidemic"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/leader"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/liverpc"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/members"
	"github.com/cohort-go/cohort/mutex"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/queue"
)

// Config configures a Node. Transport, Lock and Group are required.
type Config struct {
	ID        proc.ID
	N         int            // cluster size
	Transport live.Transport // TCP (transport.NewTCP) or in-process
	// Lock is the algorithm behind every lock: consensus/raft-lock, the
	// replicated lock service (lock.Replicated, configured by Raft), or a
	// mutual exclusion algorithm of the textbook.
	Lock     proc.Algorithm
	Raft     consensus.Config // for raft-lock; zero: consensus.DefaultConfig
	Group    proc.Algorithm   // the multicast algorithm behind every group
	Election election.LeaderConfig
	// Run names services to start at boot on every node (FAMILY/NAME →
	// algorithm); a peer's message for one starts it here too.
	Run   map[string]proc.Algorithm
	Token string // bearer token the API requires; "" for none
	// Trace, if set, records this node's events (see live.Config): those
	// of the services in Run if there are any; else, with TraceDir, the
	// locks'; else every service's.
	Trace                  io.Writer
	TraceFamily, TraceAlgo string
	TraceResume            *live.TraceResume
	// TraceDir, if set, records every service that Trace does not in a
	// trace of its kind in this directory (live.Config.TraceDir):
	// lock.jsonl, election.jsonl, group.jsonl (or groups.jsonl, the
	// replicated groups), dht.jsonl, ... — each a run of one algorithm,
	// which the nodes' files of the same name merge into.
	TraceDir string
	// TraceStates records with the events each process's description of
	// its state (live.Config.TraceStates), for the viewer's state panel.
	TraceStates bool
	Logger      *slog.Logger
	// DataDir is where services keep their stable storage (see
	// live.Config) and the per-node message queues their log
	// (DataDir/queues); "" keeps both in memory (every per-node queue
	// transient).
	DataDir string
	// LocalQueues serves each node's own queues (queue.Manager) on the
	// API. Without it, a node whose locks are replicated (raft-lock)
	// serves queues replicated on the cluster's log (queue.Replicated, the
	// service "queues"): a put is acknowledged once a majority has it, and
	// every node that votes in that log serves every queue (a node that
	// joined, once added to the voters). Every node must choose alike:
	// a node that joins with the other choice is refused (kinds.go).
	LocalQueues bool
	// Queues configures the per-node message queues (package queue); its
	// Dir and Logger come from DataDir and Logger. Its Visibility is the
	// replicated queues' default lease too.
	Queues queue.Config
	// QueueLimits bound the replicated queues (a zero field: the
	// default, consensus.DefaultQueueLimits'); New refuses limits whose
	// snapshot could outgrow a record of the log (queue.MaxSnapshot).
	// Every node must use the same.
	QueueLimits consensus.QueueLimits
	// Relays forward the API's queues — the node's own, or the
	// replicated ones — to queues on other nodes, with store and forward
	// (queue.Manager.Relay, queue.Replicated.Relay), from boot until
	// Close. A replicated queue's relay may be named by several nodes
	// (all of them, for a relay that outlives any one): the leader of the
	// queues' log relays, under an origin that is the cluster's, not the
	// node's, so each message is forwarded once.
	Relays []Relay
	// MaxServices bounds the services the node runs (live.Config); 0:
	// live.DefaultMaxServices.
	MaxServices int
	// LockIdle is how long a textbook lock nobody uses here stays running
	// before the node stops it (lock.ServerConfig.Idle): 0, a minute;
	// negative, never.
	LockIdle time.Duration
	// LockMaxTTL bounds the leases clients may ask for
	// (lock.ServerConfig.MaxTTL); with central-failover it is also how
	// long a new coordinator waits for a silent process before it grants
	// (mutex.FailoverConfig.MaxHold). 0: lock.MaxTTL (10 minutes) for
	// leases, and central-failover waits out the longest hold it has seen.
	LockMaxTTL time.Duration

	// Members runs the membership and key-value service (package
	// members) and lets nodes join the running cluster: the transport
	// must take joins (transport.Config.Joins). A node whose ID is N or
	// more joined the cluster after it started, through Contact. With
	// replicated locks (raft-lock) it runs their log, and those of the
	// groups and of the queues if they are replicated, and serves locks,
	// elections, groups and queues once an operator adds it to the
	// voters (ChangeVoters, `cohort cluster add`); with textbook ones,
	// those run on the founding members 0 .. N−1 only.
	Members       bool
	MembersParams epidemic.Params
	Contact       proc.ID

	// FoundersWait bounds how long a founder waits, as it starts, to hear
	// the other founders' kinds (founders.go), and how long a node that
	// joined with an empty data directory waits to hear whether a founder
	// recorded it with state: 0, a second; negative, no check — for
	// founders built from one configuration, such as the nodes of a
	// cluster in one process.
	FoundersWait time.Duration

	// DHT runs Pastry's DHT and Scribe (package dht) on this node, founder
	// or joined (a joined node also needs Members, whose map spreads the
	// members' addresses).
	DHT bool

	// RPC, if set, runs this founder's RPC endpoint (package liverpc,
	// with this configuration; it needs DataDir, where the stubs keep
	// their duplicate tables) and serves calls to every member's
	// procedures on the API, /v1/rpc/{server}/{proc}. A program registers
	// its procedures on Node.RPC.
	RPC *liverpc.Config
	// RPCHTTP bounds the RPC API (liverpc.HTTPConfig; zero: defaults).
	RPCHTTP liverpc.HTTPConfig
}

// Relay is a remote queue: the messages of the queue Source go to
// the queue Queue of the first of the nodes To (API endpoints) that
// answers, as they come and whenever the destination is back. The relay
// is the source queue's only consumer.
type Relay struct {
	Source string
	To     []string
	Queue  string
}

// MaxIDs is the ID space of a cluster that members join: IDs 0 .. MaxIDs−1
// (what a transport's member table may hold).
const MaxIDs = 1 << 16

// Node is a running node: the live host and its services.
type Node struct {
	cfg     Config
	live    *live.Node
	leaders *leader.Server
	// replicated serves the elections when the locks are replicated:
	// elections are then keys of the same table.
	replicated *leader.Replicated
	groups     *group.Server
	locks      *lock.Server
	members    *members.Server // nil unless Config.Members
	dht        *dht.Server     // nil unless Config.DHT
	queues     *queue.Manager
	rqueues    *queue.Replicated // the API's queues, unless nil (LocalQueues)
	rpc        *liverpc.Endpoint // nil unless Config.RPC
	rpcAPI     http.Handler
	stopRelays context.CancelFunc
	log        *slog.Logger
	// logs are the replicated logs whose voters may change (cluster.go):
	// the locks', and the groups' and the queues' if replicated; none
	// with textbook locks.
	logs       []*voterLog
	stopVoters context.CancelFunc
	recording  *sync.WaitGroup // see New
}

// joined reports whether this node joined the running cluster (an ID
// beyond the founders').
func (n *Node) joined() bool { return int(n.cfg.ID) >= n.cfg.N }

// New starts a node: the live host on cfg.Transport, and the services.
func New(cfg Config) (*Node, error) {
	joined := int(cfg.ID) >= cfg.N
	switch {
	case cfg.Transport == nil:
		return nil, errors.New("node: no transport")
	case joined && !cfg.Members:
		return nil, fmt.Errorf("node: id %d is beyond the cluster's %d founding members: only a node that runs the membership service may join", cfg.ID, cfg.N)
	case joined && cfg.Contact == proc.None:
		return nil, fmt.Errorf("node: id %d joins the cluster: it needs a contact (a member to join through)", cfg.ID)
	case cfg.Lock.New == nil:
		return nil, errors.New("node: no lock algorithm")
	case cfg.Group.New == nil:
		return nil, errors.New("node: no group algorithm")
	}
	if cfg.Election == (election.LeaderConfig{}) {
		cfg.Election = election.DefaultLeader
	}
	if cfg.RPC != nil && (cfg.DataDir == "" || joined) {
		return nil, fmt.Errorf("node: rpc: the endpoint runs on a founding member with a data directory (its stubs keep their duplicate tables there); node %d has data_dir %q", cfg.ID, cfg.DataDir)
	}
	if cfg.LockMaxTTL < 0 || cfg.LockMaxTTL > lock.MaxTTL {
		return nil, fmt.Errorf("node: lock max TTL %v: want 0 (the default, %v) to %v", cfg.LockMaxTTL, lock.MaxTTL, lock.MaxTTL)
	}
	if cfg.Lock.Name == "central-failover" && cfg.LockMaxTTL > 0 {
		// Its new coordinators wait out the longest lease a client can hold.
		fc := mutex.DefaultFailoverConfig()
		fc.MaxHold = cfg.LockMaxTTL
		newProc, err := mutex.NewCentralFailover(fc)
		if err != nil {
			return nil, err
		}
		cfg.Lock.New = newProc
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	replicated := cfg.Lock.Family == "consensus"
	if cfg.Raft.Heartbeat == 0 {
		cfg.Raft = consensus.DefaultConfig
	}
	if cfg.Members && cfg.Raft.Members == nil {
		// The logs run on every ID a member may have; the founders vote
		// until a log's configuration says otherwise.
		for p := range cfg.N {
			cfg.Raft.Members = append(cfg.Raft.Members, proc.ID(p))
		}
	}
	replicatedGroups := cfg.Group.Family == "consensus"
	replicatedQueues := replicated && !cfg.LocalQueues
	rqc := queue.ReplicatedConfig{Raft: cfg.Raft, Visibility: cfg.Queues.Visibility, Limits: cfg.QueueLimits}
	if replicatedQueues {
		if err := rqc.Validate(); err != nil {
			return nil, fmt.Errorf("node: replicated queues: %w", err)
		}
	}
	// What the data directory says of this node's state, read before
	// anything is written there (founders.go).
	founders, err := readFounderState(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	// A replicated log starts here only once the founders agree on their
	// kinds (founders.go): until then a peer's message for one is dropped
	// (the leader sends it again), so that a founder refused for other
	// limits of the replicated queues, say, never applied an entry. A
	// node that joined with an empty data directory likewise runs none
	// until it is known not to have lost its state (checkJoined): if a
	// founder recorded it with state, it must not grant a vote or
	// acknowledge an entry before it is refused.
	var agreed atomic.Bool
	lostStateCheck := joined && replicated && cfg.DataDir != "" && cfg.FoundersWait >= 0
	agreed.Store(cfg.FoundersWait < 0 || joined && (!lostStateCheck || founders.state))
	resolvers := []func(string) (proc.Algorithm, bool){leader.Resolver(cfg.Election),
		func(service string) (proc.Algorithm, bool) {
			return kindsAlgorithm(cfg.kinds(), founders, cfg.N), service == kindsService
		}}
	if replicatedQueues {
		resolvers = append(resolvers, func(service string) (proc.Algorithm, bool) {
			return queue.ReplicatedAlgorithm(rqc), service == queue.ServiceName && agreed.Load()
		})
	}
	if replicatedGroups {
		resolvers = append(resolvers, func(service string) (proc.Algorithm, bool) {
			return group.ReplicatedAlgorithm(cfg.Raft), service == group.ServiceName && agreed.Load()
		})
	} else {
		resolvers = append(resolvers, group.Resolver(cfg.Group))
	}
	if replicated {
		resolvers = append(resolvers, func(service string) (proc.Algorithm, bool) {
			return lock.ReplicatedAlgorithm(cfg.Raft), service == lock.ServiceName && agreed.Load()
		})
	} else {
		resolvers = append(resolvers, lock.Resolver(cfg.Lock))
	}
	// With services run at boot, the trace is theirs (a trace is one
	// run); else, beside a trace per kind, the locks'; else it records
	// everything.
	var traced func(string) bool
	switch {
	case len(cfg.Run) > 0:
		traced = func(service string) bool { _, ok := cfg.Run[service]; return ok }
	case cfg.TraceDir != "":
		traced = func(service string) bool { return service == lock.ServiceName || live.ServiceKind(service) == "lock" }
	}
	ids := 0
	if cfg.Members {
		ids = MaxIDs
	}
	ln, err := live.NewNode(live.Config{
		Self: cfg.ID, N: cfg.N, Transport: cfg.Transport, Logger: log,
		Resolve: func(service string) (proc.Algorithm, bool) {
			if a, ok := cfg.Run[service]; ok {
				return a, true
			}
			for _, r := range resolvers {
				if a, ok := r(service); ok {
					return a, true
				}
			}
			return proc.Algorithm{}, false
		},
		Trace: cfg.Trace, TraceFamily: cfg.TraceFamily, TraceAlgo: cfg.TraceAlgo, TraceResume: cfg.TraceResume,
		TraceStates:  cfg.TraceStates,
		TraceService: traced,
		// The founders' exchange of their kinds is no part of any run.
		Untraced:    func(service string) bool { return service == kindsService },
		TraceDir:    cfg.TraceDir,
		DataDir:     cfg.DataDir,
		MaxServices: cfg.MaxServices,
		IDs:         ids,
	})
	if err != nil {
		return nil, err
	}
	for i, r := range cfg.Relays {
		if err := queue.ValidName(r.Source); err != nil {
			return nil, fmt.Errorf("node: relay %d: source: %w", i, err)
		}
		if err := queue.ValidName(r.Queue); err != nil {
			return nil, fmt.Errorf("node: relay %d: destination: %w", i, err)
		}
		if len(r.To) == 0 {
			return nil, fmt.Errorf("node: relay %d (%s): no destination endpoints", i, r.Source)
		}
		for _, ep := range r.To {
			if _, err := httpapi.BaseURL(ep); err != nil {
				return nil, fmt.Errorf("node: relay %d (%s): %w", i, r.Source, err)
			}
		}
	}
	qc := cfg.Queues
	qc.Dir, qc.Logger = "", log
	if cfg.DataDir != "" {
		qc.Dir = filepath.Join(cfg.DataDir, "queues")
	}
	queues, err := queue.Open(qc)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("queues: %w", err), ln.Close())
	}
	closeAll := func() error { return errors.Join(queues.Close(), ln.Close()) }
	rctx, stopRelays := context.WithCancel(context.Background())
	// startRelays runs the relays from src: the node's own queues, or the
	// replicated ones (once they run).
	startRelays := func(src interface {
		Relay(context.Context, queue.RelayConfig) error
	}, origin string, turns *lock.Replicated) {
		for _, r := range cfg.Relays {
			go func() {
				rc := queue.RelayConfig{Source: r.Source, Queue: r.Queue,
					Destination: &queue.Client{Endpoints: r.To, Token: cfg.Token},
					Origin:      origin + r.Source, Logger: log}
				if turns != nil {
					rc.Turn = relayTurn(turns, "relay/"+r.Source)
				}
				err := src.Relay(rctx, rc)
				if rctx.Err() == nil {
					log.Error("relay stopped", "source", r.Source, "err", err)
				}
			}()
		}
	}
	if !replicatedQueues {
		startRelays(queues, fmt.Sprintf("node%d/", cfg.ID), nil)
	}
	// recording: the founders' record of state being written (founders.go),
	// which ends once the node's services stop.
	recording := new(sync.WaitGroup)
	closeAll = func() error {
		stopRelays()
		defer recording.Wait()
		return errors.Join(queues.Close(), ln.Close())
	}
	if err := ln.Start(); err != nil {
		return nil, errors.Join(err, closeAll())
	}
	if !joined && cfg.FoundersWait >= 0 {
		// Refused before it runs anything the founders must agree on.
		if err := checkFounders(context.Background(), ln, cfg.ID, cfg.N, cfg.kinds(), or(cfg.FoundersWait, founderWait), cfg.DataDir, founders, recording, log); err != nil {
			return nil, errors.Join(err, closeAll())
		}
	}
	if !joined {
		agreed.Store(true)
	}
	for name, a := range cfg.Run {
		if _, err := ln.Service(name, a); err != nil {
			return nil, errors.Join(fmt.Errorf("run: %w", err), closeAll())
		}
	}
	var ms *members.Server
	if cfg.Members {
		contact := cfg.Contact
		if !joined {
			contact = proc.None // a founder starts; it knows the others
		}
		if ms, err = members.NewServer(members.Config{Node: ln, Params: cfg.MembersParams, Contact: contact, Logger: log,
			Durable: cfg.DataDir != "", Kinds: cfg.kinds().String()}); err != nil {
			return nil, errors.Join(fmt.Errorf("members: %w", err), closeAll())
		}
		if joined {
			// Refused before it runs a replicated log: a node that runs
			// other kinds than the cluster's would be half added.
			if err := checkJoin(context.Background(), ms, cfg.ID, contact, cfg.kinds(), log); err != nil {
				return nil, errors.Join(err, closeAll())
			}
		}
	}
	if lostStateCheck {
		// Refused before it runs a replicated log, once the members map
		// has told it where the founders are.
		if err := checkJoined(context.Background(), ln, cfg.ID, cfg.N, cfg.kinds(), or(cfg.FoundersWait, founderWait), cfg.DataDir, founders); err != nil {
			return nil, errors.Join(err, closeAll())
		}
	}
	agreed.Store(true)
	var ds *dht.Server
	if cfg.DHT {
		contact := cfg.Contact
		if !joined {
			contact = proc.None
		}
		if ds, err = dht.NewServer(dht.Config{Node: ln, Contact: contact, Logger: log}); err != nil {
			return nil, errors.Join(fmt.Errorf("dht: %w", err), closeAll())
		}
	}
	if joined && !replicated {
		return &Node{cfg: cfg, live: ln, log: log, members: ms, dht: ds, queues: queues, stopRelays: stopRelays, stopVoters: func() {}, recording: recording}, nil
	}
	if !replicated {
		// A textbook lock that ran here before restarts at once, so that
		// it can tell its peers it lost its state (see mutex.Acquire).
		stored, err := ln.Stored()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("data_dir: %w", err), closeAll())
		}
		for _, name := range stored {
			if lockName, ok := strings.CutPrefix(name, "lock/"); ok && lock.ValidName(lockName) == nil {
				if _, err := ln.Service(name, cfg.Lock); err != nil {
					log.Warn("resuming a lock kept in data_dir", "service", name, "err", err)
				}
			}
		}
	}
	lc := lock.ServerConfig{Node: ln, Algorithm: cfg.Lock, Logger: log, Idle: cfg.LockIdle, MaxTTL: cfg.LockMaxTTL}
	gc := group.ServerConfig{Node: ln, Algorithm: cfg.Group, Logger: log}
	if replicatedGroups {
		rg, err := group.NewReplicated(ln, cfg.Raft)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("groups: %w", err), closeAll())
		}
		gc.Replicated = rg
	}
	nd := &Node{cfg: cfg, live: ln, log: log, members: ms, dht: ds, queues: queues, stopRelays: stopRelays, recording: recording,
		leaders: leader.NewServer(leader.ServerConfig{Node: ln, Election: cfg.Election, Logger: log}),
		groups:  group.NewServer(gc),
	}
	if replicated {
		rep, err := lock.NewReplicated(ln, cfg.Raft)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("locks: %w", err), closeAll())
		}
		lc.Replicated = rep
		nd.replicated = leader.NewReplicated(rep, cfg.ID, log)
	}
	nd.locks = lock.NewServer(lc)
	if replicated {
		nd.logs = append(nd.logs, &voterLog{name: lock.ServiceName, self: cfg.ID, svc: lc.Replicated.Service()})
		if replicatedGroups {
			nd.logs = append(nd.logs, &voterLog{name: group.ServiceName, self: cfg.ID, svc: gc.Replicated.Service()})
		}
		for _, l := range nd.logs {
			l.refresh()
		}
	}
	if replicatedQueues {
		if nd.rqueues, err = queue.NewReplicated(ln, rqc); err != nil {
			return nil, errors.Join(fmt.Errorf("queues: %w", err), closeAll())
		}
		// A node removed from the queues' voters is sent no more
		// entries: what waits at it fails, and its listeners are cut
		// off, to go elsewhere.
		l := &voterLog{name: queue.ServiceName, self: cfg.ID, svc: nd.rqueues.Service(), left: nd.rqueues.Left, back: nd.rqueues.Rejoined}
		l.refresh()
		nd.logs = append(nd.logs, l)
		startRelays(nd.rqueues, "cluster/", lc.Replicated)
	}
	vctx, stopVoters := context.WithCancel(context.Background())
	nd.stopVoters = stopVoters
	go nd.watchVoters(vctx)
	if cfg.RPC != nil {
		if nd.rpc, err = liverpc.New(ln, *cfg.RPC); err != nil {
			return nil, errors.Join(fmt.Errorf("rpc: %w", err), closeAll())
		}
		nd.rpcAPI = liverpc.HTTPHandler(nd.rpc, cfg.RPCHTTP)
	}
	return nd, nil
}

// RPC is the node's RPC endpoint (Config.RPC), on which a program
// registers its procedures; nil without one.
func (n *Node) RPC() *liverpc.Endpoint { return n.rpc }

// Campaign stands this node in election name for as long as ctx lasts
// (campaign: in node.yaml). With the replicated lock it holds the
// election by a session of the failure detector's timeout (Election.Timeout),
// renewed every quarter of it; else it is a bully-fd candidate.
func (n *Node) Campaign(ctx context.Context, name string) error {
	if err := leader.ValidName(name); err != nil {
		return err
	}
	if n.replicated == nil && n.joined() {
		return errJoined(n.cfg)
	}
	if n.replicated != nil {
		ttl := n.cfg.Election.Timeout
		if ttl < 100*time.Millisecond {
			ttl = max(election.DefaultLeader.Timeout, 100*time.Millisecond)
		}
		go n.replicated.Lead(ctx, name, ttl)
		return nil
	}
	e, err := n.leaders.Election(name)
	if err != nil {
		return err
	}
	go func() {
		if err := e.Campaign(ctx); err == nil {
			n.log.Info("leading", "election", name)
		}
	}()
	return nil
}

// Live is the node's host, for services used from Go.
func (n *Node) Live() *live.Node { return n.live }

// Elections is the node's election service (to campaign from Go).
func (n *Node) Elections() *leader.Server { return n.leaders }

// Handler is the node's HTTP API: every service under /v1/, behind the
// bearer-token check, a health probe, and the Prometheus metrics (open to
// a scraper).
func (n *Node) Handler() http.Handler {
	api := http.NewServeMux()
	// A service this node does not run says so, and how to run it,
	// rather than a bare "404 page not found".
	absent := func(paths []string, msg string) {
		for _, p := range paths {
			api.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { httpapi.Fail(w, http.StatusNotImplemented, msg) })
		}
	}
	membersPaths := []string{"/v1/members", "/v1/watch", "/v1/kv", "/v1/kv/", "/v1/readings/", "/v1/aggregate/", "/v1/resources/"}
	if n.members != nil {
		for _, p := range membersPaths {
			api.Handle(p, n.members.Handler())
		}
	} else {
		absent(membersPaths, fmt.Sprintf("node %d runs no membership service (members: true in node.yaml, or cohort cluster up --members)", n.cfg.ID))
	}
	if n.dht != nil {
		api.Handle("/v1/dht/", n.dht.Handler())
		api.Handle("/v1/scribe/", n.dht.Handler())
	} else {
		absent([]string{"/v1/dht/", "/v1/scribe/"}, fmt.Sprintf("node %d runs no DHT (dht: true in node.yaml, or cohort cluster up --dht)", n.cfg.ID))
	}
	// Queues: replicated on the log — served, as the locks are, while
	// this node votes in the queues' log — or every node's own (founder
	// or not).
	qh := queue.Handler(n.queueBackend())
	if l := n.logNamed(queue.ServiceName); l != nil {
		qh = n.votersOnly(l, qh)
	}
	api.Handle("/v1/queues", qh)
	api.Handle("/v1/queues/", qh)
	api.Handle("/v1/queues:tx", qh)
	api.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		h := Health{Node: int(n.cfg.ID), Nodes: n.cfg.N, Members: n.members != nil, Queues: "local"}
		if n.rqueues != nil {
			h.Queues = "raft-queue"
		}
		if !n.joined() || n.replicated != nil {
			h.Lock, h.Group = n.cfg.Lock.Name, n.cfg.Group.Name
			h.Elections = "raft-lock" // keys of the replicated lock table
			if n.replicated == nil {
				h.Elections = "bully-fd"
			}
		}
		if n.joined() {
			h.Nodes, h.Joined = 0, true
		}
		if l := n.logNamed(lock.ServiceName); l != nil {
			voter := l.voter.Load()
			h.Voter = &voter
		}
		httpapi.Reply(w, http.StatusOK, h)
	})
	n.clusterRoutes(api)
	notHere := func(p string) {
		msg := errJoined(n.cfg).Error()
		api.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { httpapi.Fail(w, http.StatusNotImplemented, msg) })
	}
	if n.joined() && n.replicated == nil {
		for _, p := range []string{"/v1/locks/", "/v1/sessions", "/v1/sessions/", "/v1/elections/", "/v1/groups/"} {
			notHere(p)
		}
		return n.handler(api)
	}
	// With replicated locks, a node serves locks, elections (and
	// replicated groups) while it votes in their log.
	gate := func(name string, h http.Handler) http.Handler {
		if l := n.logNamed(name); l != nil {
			return n.votersOnly(l, h)
		}
		return h
	}
	api.Handle("/v1/locks/", gate(lock.ServiceName, n.locks.Handler()))
	api.Handle("/v1/sessions", gate(lock.ServiceName, n.locks.Handler()))
	api.Handle("/v1/sessions/", gate(lock.ServiceName, n.locks.Handler()))
	if n.replicated != nil {
		api.Handle("/v1/elections/", gate(lock.ServiceName, n.replicated.Handler()))
	} else {
		api.Handle("/v1/elections/", n.leaders.Handler())
	}
	if n.joined() && n.logNamed(group.ServiceName) == nil {
		notHere("/v1/groups/") // textbook groups run on the founders
	} else {
		api.Handle("/v1/groups/", gate(group.ServiceName, n.groups.Handler()))
	}
	if n.rpc != nil {
		api.Handle("/v1/rpc/", n.rpcAPI)
	}
	return n.handler(api)
}

// errJoined is the answer of a node that joined the running cluster to a
// request for a textbook lock, election or group.
func errJoined(cfg Config) error {
	return fmt.Errorf("node %d joined the running cluster: the cluster's textbook locks (%s), elections and groups (%s) run on the founding members only (those listed in peers:); with replicated ones (lock: raft-lock), a joined node serves them once added (cohort cluster add %d)", cfg.ID, cfg.Lock.Name, cfg.Group.Name, cfg.ID)
}

// handler puts the token check in front of api, beside the metrics and
// the profiles.
func (n *Node) handler(api http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/v1/", httpapi.RequireToken(n.cfg.Token, api))
	// The metrics name the locks, elections and groups: a scraper sends
	// the token too (Prometheus: authorization: {credentials: TOKEN}).
	mux.Handle("GET /metrics", httpapi.RequireToken(n.cfg.Token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		n.live.WriteMetrics(w)
		if n.members != nil {
			n.members.WriteMetrics(w)
		}
		n.queueBackend().WriteMetrics(w)
		if n.groups != nil {
			n.groups.WriteMetrics(w)
		}
	})))
	// The Go runtime's profiles (what the process's memory and CPU go
	// to), to whoever holds the token; refused on a node without one.
	mux.Handle(pprofPrefix, httpapi.Profiles(pprofPrefix, n.cfg.Token))
	return mux
}

// pprofPrefix is where the node's API serves its profiles.
const pprofPrefix = "/debug/pprof/"

// Health is the answer of GET /v1/health: the node, and the algorithms
// behind its services (clients warn when they are textbook ones, which
// keep no state across a restart).
type Health struct {
	Node      int    `json:"node"`
	Nodes     int    `json:"nodes"` // the founding members; 0 from a node that joined later
	Lock      string `json:"lock,omitempty"`
	Elections string `json:"elections,omitempty"`
	Group     string `json:"group,omitempty"`
	Members   bool   `json:"members,omitempty"` // the membership and key-value service runs
	Joined    bool   `json:"joined,omitempty"`  // this node joined the running cluster
	// Voter: whether this node votes in the replicated log of the locks
	// (and so serves them); absent with textbook locks.
	Voter *bool `json:"voter,omitempty"`
	// Queues: "raft-queue" (replicated on the log) or "local" (the
	// node's own).
	Queues string `json:"queues,omitempty"`
}

// DHT is the node's DHT and Scribe service, or nil.
func (n *Node) DHT() *dht.Server { return n.dht }

// Members is the node's membership and key-value service, or nil.
func (n *Node) Members() *members.Server { return n.members }

// Queues is the node's own queue manager (the API's queues with
// LocalQueues, and the sources of relays).
func (n *Node) Queues() *queue.Manager { return n.queues }

// ReplicatedQueues is the queues replicated on the cluster's log, which
// the API serves; nil with LocalQueues or without the raft lock.
func (n *Node) ReplicatedQueues() *queue.Replicated { return n.rqueues }

// queueBackend is the queues the API serves.
func (n *Node) queueBackend() queue.Backend {
	if n.rqueues != nil {
		return n.rqueues
	}
	return n.queues
}

// Close stops the services, the queues and the transport.
func (n *Node) Close() error {
	n.stopRelays()
	n.stopVoters()
	if n.rpc != nil {
		defer n.rpc.Close() // after the node: a crash, not answers to the calls under way
	}
	defer n.recording.Wait() // the node's services stopped: it ends
	return errors.Join(n.queues.Close(), n.live.Close())
}

// relayTTL is the session under which a node holds its turn to relay a
// replicated queue: a node that dies hands the turn on within it.
const relayTTL = 10 * time.Second

// relayTurn is a replicated relay's turn (queue.RelayConfig.Turn): the
// lock key on the cluster's log, held under a session kept alive while
// the turn lasts. The nodes that name the relay — one, some or all —
// take turns; the turn ends when the session can no longer be renewed
// before its reckoning (Session.Until) runs out.
func relayTurn(locks *lock.Replicated, key string) func(context.Context) (context.Context, context.CancelFunc, error) {
	return func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		for {
			s, err := locks.Open(ctx, relayTTL)
			if err == nil {
				tctx, end := context.WithCancel(ctx)
				go func() { // keep the session alive; end the turn with it
					defer end()
					defer func() {
						cctx, cancel := context.WithTimeout(context.Background(), time.Second)
						s.Close(cctx)
						cancel()
					}()
					for {
						left := time.Until(s.Until())
						t := time.NewTimer(min(relayTTL/3, max(left/2, 0)))
						select {
						case <-tctx.Done():
							t.Stop()
							return
						case <-t.C:
						}
						kctx, cancel := context.WithDeadline(tctx, s.Until())
						_, err := s.KeepAlive(kctx)
						cancel()
						if errors.Is(err, lock.ErrSessionGone) || time.Now().After(s.Until()) {
							return
						}
					}
				}()
				if _, err = s.LockKey(tctx, key); err == nil {
					return tctx, end, nil
				}
				end()
			}
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, nil, ctx.Err()
			case <-t.C:
			}
		}
	}
}
