package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/consensus"
	"github.com/cohort-go/cohort/election"
	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/internal/httpapi"
	"github.com/cohort-go/cohort/internal/suggest"
	"github.com/cohort-go/cohort/leader"
	"github.com/cohort-go/cohort/live"
	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/lock"
	"github.com/cohort-go/cohort/node"
	"github.com/cohort-go/cohort/proc"
	"github.com/cohort-go/cohort/queue"
	"github.com/cohort-go/cohort/registry"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
)

// nodeConfig is the file `cohort node --config` reads.
type nodeConfig struct {
	ID         int            `yaml:"id"`
	Listen     string         `yaml:"listen"`         // cluster transport address
	API        string         `yaml:"api"`            // HTTP API address
	Peers      map[int]string `yaml:"peers"`          // every member's transport address, by id (itself included)
	Secret     string         `yaml:"secret"`         // shared cluster secret, or
	SecretFile string         `yaml:"secret_file"`    // a file holding it
	TLSDir     string         `yaml:"tls_dir"`        // or mutual TLS: a directory written by cohort certs
	Lock       string         `yaml:"lock"`           // what is behind the locks: "raft" (the replicated log), or a mutex algorithm: "ricart-agrawala"
	APIToken   string         `yaml:"api_token"`      // bearer token required by the HTTP API, or
	TokenFile  string         `yaml:"api_token_file"` // a file holding it
	Trace      string         `yaml:"trace"`          // write this node's events here (JSONL); merge with cohort trace merge
	TraceDir   string         `yaml:"trace_dir"`      // write each kind of service's events to its own trace here: lock.jsonl, election.jsonl, group.jsonl, dht.jsonl ... (with trace: too, that one keeps the run: services, else the locks)
	States     *bool          `yaml:"trace_states"`   // with trace or trace_dir: record each process's described state after every step, for cohort view's state panel (default true)
	Run        []string       `yaml:"run"`            // more services to start at boot: FAMILY/NAME of any algorithm, e.g. clocks/lamport
	Group      string         `yaml:"group"`          // what is behind the groups: "raft" (the replicated log), or a multicast algorithm: "total-sequencer"
	Campaign   []string       `yaml:"campaign"`       // elections this node stands in from boot
	Election   electionConfig `yaml:"election"`       // the failure detector of every election (the same on every node)
	DataDir    string         `yaml:"data_dir"`       // the node\'s directory: relative paths above (trace, tls_dir, secret_file) are taken from it
	APIConns   int            `yaml:"api_max_conns"`  // connections the API takes at once (default 4096, fewer if the descriptor limit is low)
	Services   int            `yaml:"max_services"`   // services the node runs at once (default 512: with a textbook lock, election or group algorithm, each name is one)
	Members    bool           `yaml:"members"`        // run the membership and key-value service (SWIM and anti-entropy); nodes may then join
	Join       string         `yaml:"join"`           // join a running cluster through one member: ID@HOST:PORT (implies members)
	Gossip     time.Duration  `yaml:"gossip_period"`  // the membership service's protocol period (default 400ms)
	LockIdle   time.Duration  `yaml:"lock_idle"`      // a textbook lock unused here this long is stopped, restarted from data_dir when next used (default 1m; -1s: never)
	LockMaxTTL time.Duration  `yaml:"lock_max_ttl"`   // the longest lease a client may ask for (default and most 10m); central-failover's new coordinators wait this long for a silent node
	Relays     []relayConfig  `yaml:"relays"`         // remote queues: forward a queue (local, or replicated with queues: replicated) to a queue on other nodes (store and forward)
	Queues     string         `yaml:"queues"`         // "replicated" (on the log, the default with lock: raft) or "local" (each node's own)
	QueueLimit queueLimits    `yaml:"queue_limits"`   // bounds of the queues; 0: the default
	DHT        bool           `yaml:"dht"`            // run Pastry's DHT and Scribe (cohort dht, cohort scribe)
	LinkIdle   time.Duration  `yaml:"link_idle"`      // lazy connections: a peer is dialed when there is something to send it, and a connection idle this long is closed (default 0: one to every peer, kept)
	MaxLinks   int            `yaml:"max_links"`      // with link_idle: the most connections held at once; the least recently used is closed for a new one (default 0: no bound)
	Probes     string         `yaml:"probes"`         // how the membership service's probes travel: "tcp" (the default: on the connections) or "udp" (authenticated datagrams on the listen port; needs secret)

	contact     proc.ID // parsed from Join
	contactAddr string
}

// parseContact parses join's ID@HOST:PORT.
func parseContact(s string) (proc.ID, string, error) {
	id, addr, ok := strings.Cut(s, "@")
	n, err := strconv.Atoi(id)
	if !ok || err != nil || n < 0 || n >= node.MaxIDs {
		return proc.None, "", fmt.Errorf("%q: want ID@HOST:PORT, the id and transport address of a member (e.g. 0@10.0.0.1:7000)", clipValue(s))
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return proc.None, "", fmt.Errorf("%q: %v", clipValue(s), err)
	}
	return proc.ID(n), addr, nil
}

// clipValue shortens a bad value for an error message.
func clipValue(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// relayConfig is a remote queue: the local queue source forwarded to
// queue on the first of the nodes to (API endpoints) that answers.
type relayConfig struct {
	Source string   `yaml:"source"`
	To     []string `yaml:"to"`
	Queue  string   `yaml:"queue"`
}

// queueLimits bound the queues (node.yaml queue_limits:); 0 is the
// default. messages and state bound replicated queues only.
type queueLimits struct {
	Messages int   `yaml:"messages"` // per queue (default 100000)
	Bytes    int64 `yaml:"bytes"`    // of bodies, per queue (default 64 MiB replicated, 256 MiB local)
	Queues   int   `yaml:"queues"`   // queues holding messages (default 1024 replicated, 10000 local)
	State    int64 `yaml:"state"`    // replicated: every message, as a snapshot holds it (default 56 MiB)
}

// electionConfig tunes the leader service's failure detector.
type electionConfig struct {
	Heartbeat time.Duration `yaml:"heartbeat"` // default 50ms
	Timeout   time.Duration `yaml:"timeout"`   // default 300ms
	Phi       float64       `yaml:"phi"`       // > 0: phi-accrual with this threshold
	Quorum    *bool         `yaml:"quorum"`    // lead only while hearing a majority; default true
}

func (e electionConfig) leaderConfig() election.LeaderConfig {
	return election.LeaderConfig{Heartbeat: e.Heartbeat, Timeout: e.Timeout, Phi: e.Phi, Quorum: e.Quorum == nil || *e.Quorum}
}

// loadNodeConfig reads path; join, if not empty, overrides its join:.
func loadNodeConfig(path, join string) (*nodeConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c nodeConfig
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, explainYAML(path, data, err, reflect.TypeOf(c))
	}
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%s: %s: %s", path, field, fmt.Sprintf(format, args...))
	}
	if join != "" {
		c.Join = join
	}
	n := len(c.Peers)
	c.contact = proc.None
	if c.Join != "" {
		id, addr, err := parseContact(c.Join)
		if err != nil {
			return nil, bad("join", "%v", err)
		}
		c.contact, c.contactAddr, c.Members = id, addr, true
	}
	switch {
	case c.Join != "" && (c.ID < 1 || c.ID >= node.MaxIDs):
		return nil, bad("id", "%d: a node that joins needs an id no founding member has, 1..%d", c.ID, node.MaxIDs-1)
	case c.Join != "" && int(c.contact) == c.ID:
		return nil, bad("join", "%q names this node itself", c.Join)
	case c.Join != "" && n > 0:
		return nil, bad("peers", "a node that joins lists no peers: it learns them from the member it joins through")
	case c.Join == "" && n < 1:
		return nil, bad("peers", "list every member's address by id, this node's included (or join: a running cluster through one member)")
	case c.Join == "" && (c.ID < 0 || c.ID >= n):
		return nil, bad("id", "%d is not one of the peers' ids 0..%d", c.ID, n-1)
	case c.Gossip < 0 || (c.Gossip > 0 && c.Gossip < 10*time.Millisecond):
		return nil, bad("gossip_period", "%v: want at least 10ms", c.Gossip)
	case c.Listen == "":
		return nil, bad("listen", "missing (the address peers connect to)")
	case c.API == "":
		return nil, bad("api", "missing (the HTTP API's address)")
	}
	for i := 0; i < n; i++ {
		if _, ok := c.Peers[i]; !ok {
			return nil, bad("peers", "ids must be 0..%d; %d is missing", n-1, i)
		}
	}
	switch {
	case c.LinkIdle < 0 || (c.LinkIdle > 0 && c.LinkIdle < 10*time.Millisecond):
		return nil, bad("link_idle", "%v: want at least 10ms, or 0 to keep a connection to every peer", c.LinkIdle)
	case c.MaxLinks < 0:
		return nil, bad("max_links", "%d: want a positive number of connections, or 0 for no bound", c.MaxLinks)
	case c.MaxLinks > 0 && c.LinkIdle == 0:
		return nil, bad("max_links", "%d needs link_idle (lazy connections): a connection kept to every peer would be dialed again at once", c.MaxLinks)
	}
	for i, r := range c.Relays {
		if err := queue.ValidName(r.Source); err != nil {
			return nil, bad("relays", "%d: source: %v", i, err)
		}
		if err := queue.ValidName(r.Queue); err != nil {
			return nil, bad("relays", "%d: queue: %v", i, err)
		}
		if len(r.To) == 0 {
			return nil, bad("relays", "%d: to: none given (the destination nodes' API endpoints)", i)
		}
		for _, ep := range r.To {
			if _, err := httpapi.BaseURL(ep); err != nil {
				return nil, bad("relays", "%d: to: %v", i, err)
			}
		}
	}
	if c.DataDir != "" {
		for _, p := range []*string{&c.Trace, &c.TraceDir, &c.TLSDir, &c.SecretFile, &c.TokenFile} {
			if *p != "" && !filepath.IsAbs(*p) {
				*p = filepath.Join(c.DataDir, *p)
			}
		}
	}
	if c.SecretFile != "" {
		b, err := os.ReadFile(c.SecretFile)
		if err != nil {
			return nil, bad("secret_file", "%v", err)
		}
		c.Secret = strings.TrimSpace(string(b))
	}
	if c.TokenFile != "" {
		if c.APIToken != "" {
			return nil, bad("api_token_file", "give api_token or api_token_file, not both")
		}
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return nil, bad("api_token_file", "%v", err)
		}
		if c.APIToken = strings.TrimSpace(string(b)); c.APIToken == "" {
			return nil, bad("api_token_file", "%s is empty", c.TokenFile)
		}
	}
	if (c.Secret == "") == (c.TLSDir == "") {
		return nil, bad("secret", "give exactly one of secret (or secret_file) and tls_dir")
	}
	if c.Secret != "" && len(c.Secret) < 16 {
		return nil, bad("secret", "%d bytes is too short to authenticate a cluster: use at least 16", len(c.Secret))
	}
	switch c.Probes {
	case "", "tcp", "udp":
	default:
		return nil, bad("probes", "%q: want tcp (on the connections, the default) or udp (datagrams on the listen port)", clipValue(c.Probes))
	}
	if c.Probes == "udp" && c.TLSDir != "" {
		return nil, bad("probes", "udp needs the cluster's secret (secret or secret_file) to authenticate datagrams: no key common to the cluster can be derived from tls_dir's certificates; use probes: tcp")
	}
	if c.Lock == "" {
		c.Lock = "raft"
	}
	if c.Group == "" {
		c.Group = "raft"
	}
	if c.Join != "" {
		// A node that joins keeps its copy of the replicated logs in
		// data_dir if it has one (runNode warns if it has none): it may
		// join without one, and must not then be made a voter.
	} else if c.Lock == "raft" && c.DataDir == "" {
		return nil, bad("data_dir", "none given: lock: raft keeps its log there, so that a restarted node recovers what it acknowledged (or choose a textbook algorithm, e.g. lock: ricart-agrawala, which keeps no state)")
	}
	switch {
	case c.Queues == "" && c.Lock == "raft" && len(c.Relays) == 0:
		// (A node with relays keeps the local queues it had before
		// relays from replicated queues existed: queues: replicated
		// relays those.)
		c.Queues = "replicated"
	case c.Queues == "":
		c.Queues = "local"
	case c.Queues != "replicated" && c.Queues != "local":
		return nil, bad("queues", "%q: want replicated (on the log, with lock: raft) or local (each node's own)", clipValue(c.Queues))
	case c.Queues == "replicated" && c.Lock != "raft":
		return nil, bad("queues", "replicated: the queues are replicated on the log of lock: raft, beside the locks' (this node has lock: %s); choose queues: local", c.Lock)
	}
	ql := c.QueueLimit
	switch {
	case ql.Messages < 0:
		return nil, bad("queue_limits.messages", "%d: want a positive number, or 0 for the default (%d)", ql.Messages, consensus.DefaultQueueLimits.Messages)
	case ql.Bytes < 0:
		return nil, bad("queue_limits.bytes", "%d: want a positive number of bytes, or 0 for the default", ql.Bytes)
	case ql.Queues < 0:
		return nil, bad("queue_limits.queues", "%d: want a positive number, or 0 for the default", ql.Queues)
	case ql.State < 0:
		return nil, bad("queue_limits.state", "%d: want a positive number of bytes, or 0 for the default (%d)", ql.State, consensus.DefaultQueueLimits.State)
	case c.Queues == "local" && ql.Messages > 0:
		return nil, bad("queue_limits.messages", "%d: bounds replicated queues; a node's own queues are bounded by bytes and queues", ql.Messages)
	case c.Queues == "local" && ql.State > 0:
		return nil, bad("queue_limits.state", "%d: bounds replicated queues (what their snapshots hold); a node's own queues are bounded by bytes and queues", ql.State)
	case c.Queues == "replicated":
		if err := c.replicatedLimits().Validate(queue.MaxSnapshot); err != nil {
			return nil, bad("queue_limits", "%v", err)
		}
	}
	if c.Group == "raft" && c.DataDir == "" && c.Join == "" {
		return nil, bad("data_dir", "none given: group: raft keeps its log there, so that a restarted node recovers what it acknowledged (or choose a textbook algorithm, e.g. group: total-sequencer, which keeps no state)")
	}
	e := c.Election
	switch {
	case e.Heartbeat < 0 || (e.Heartbeat > 0 && e.Heartbeat < time.Millisecond):
		return nil, bad("election.heartbeat", "%v: want at least 1ms", e.Heartbeat)
	case e.Timeout < 0 || (e.Timeout > 0 && e.Timeout <= max(e.Heartbeat, election.DefaultLeader.Heartbeat)):
		return nil, bad("election.timeout", "%v: want more than the heartbeat interval", e.Timeout)
	case e.Phi < 0 || math.IsNaN(e.Phi) || math.IsInf(e.Phi, 0):
		return nil, bad("election.phi", "%v: want a positive threshold (e.g. 8), or 0 for the plain timeout", e.Phi)
	}
	for _, name := range c.Campaign {
		if err := leader.ValidName(name); err != nil {
			return nil, bad("campaign", "%v", err)
		}
	}
	if c.APIToken == "" && !loopback(c.API) {
		return nil, bad("api", "%s is reachable from other machines: set api_token (or api_token_file), which clients send as a bearer token — or bind 127.0.0.1", c.API)
	}
	if c.LockMaxTTL < 0 || c.LockMaxTTL > lock.MaxTTL || (c.LockMaxTTL > 0 && c.LockMaxTTL < 100*time.Millisecond) {
		return nil, bad("lock_max_ttl", "%v: want 100ms to %v, or 0 for the default (%v)", c.LockMaxTTL, lock.MaxTTL, lock.MaxTTL)
	}
	if c.Services < 0 {
		return nil, bad("max_services", "%d: want a positive number, or 0 for the default", c.Services)
	}
	if c.APIConns < 0 {
		return nil, bad("api_max_conns", "%d: want a positive number of connections, or 0 for the default", c.APIConns)
	}
	// Made last, so that a configuration refused leaves nothing behind.
	if c.DataDir != "" {
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return nil, bad("data_dir", "%v", err)
		}
	}
	return &c, nil
}

func (c *nodeConfig) replicatedLimits() consensus.QueueLimits {
	l := c.QueueLimit
	return consensus.QueueLimits{Messages: l.Messages, Bytes: l.Bytes, Queues: l.Queues, State: l.State}
}

// loopback reports whether API address addr is reachable from this
// machine only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newNodeCmd() *cobra.Command {
	var cfgPath, join string
	cmd := &cobra.Command{
		Use:   "node --config node.yaml [--join ID@HOST:PORT]",
		Short: "Run one member of a live Cohort cluster",
		Long: `Run one node of a live cluster: the transport to its peers (authenticated by
a shared secret or mutual TLS), the lock, election and group services and
their HTTP API. SIGTERM or SIGINT stop it gracefully.

node.yaml:
  id: 0
  listen: 127.0.0.1:7000        # transport address
  api: 127.0.0.1:7100           # HTTP API
  peers: {0: 127.0.0.1:7000, 1: 127.0.0.1:7001, 2: 127.0.0.1:7002}
  secret_file: cluster.secret   # or secret: ..., or tls_dir: certs (from cohort certs)
  lock: raft                    # behind every lock: raft (the replicated log, the default),
                                # or a textbook mutex algorithm: ricart-agrawala, ...
  group: raft                   # behind every group: raft (the replicated log, the default),
                                # or a textbook multicast algorithm: total-sequencer, ...
  campaign: [scheduler]         # optional: elections this node stands in (cohort elect)
  election: {heartbeat: 50ms, timeout: 300ms, phi: 0, quorum: true}   # optional: the failure detector
  run: [clocks/lamport]         # optional: more algorithms to run as services
  data_dir: /var/lib/cohort     # the node's state (required by lock: raft): services keep their
                                # stable storage in data_dir/storage; relative paths are taken from here
  trace: trace.jsonl            # optional: record this node's events
  trace_dir: traces             # optional: a trace per kind of service (lock.jsonl, election.jsonl,
                                # group.jsonl, groups.jsonl, dht.jsonl ...), each a run of its family
                                # (with trace: too, that one keeps the run: services, else the locks)
  trace_states: true            # optional, with trace: or trace_dir:, each process's state after every
                                # step (the default; cohort view shows it)
  api_token: ...                # bearer token for the API (or api_token_file: FILE); required
                                # when api: is not a loopback address
  api_max_conns: 4096           # optional: connections the API takes at once (the next get 503)
  max_services: 512             # optional: services the node runs at once (each textbook lock,
                                # election or group name is one; the next is refused with 503)
  members: true                 # optional: run the membership and key-value service (cohort members,
                                # cohort kv); nodes may then join the running cluster
  gossip_period: 400ms          # optional: its protocol period
  link_idle: 2s                 # optional: dial a peer only when there is something to send it, and
                                # close a connection idle this long (default 0: one to every peer, kept)
  max_links: 16                 # optional, with link_idle: the most connections held at once; the least
                                # recently used quiet one is closed for a new one (default 0: no bound)
  probes: udp                   # optional: the membership service's probes as datagrams (UDP on the listen
                                # address, each with a MAC under a key derived from the secret; needs
                                # secret), as memberlist's; default tcp: on the connections
  queues: replicated            # optional: replicated (on the log; the default with lock: raft) or local
  queue_limits:                 # optional, each 0 for its default: messages and bytes per queue, queues,
    {messages: 100000, bytes: 67108864, queues: 1024, state: 58720256}   # and (replicated) the state:
                                # every message as a snapshot holds it, so a snapshot fits the log's record
  dht: true                     # optional: run Pastry's DHT and Scribe (cohort dht, cohort scribe),
                                # on founders and joined nodes alike
  relays:                       # optional: remote queues, stored here and forwarded (local queues unless
                                # queues: replicated is given: then one node relays from the replicated queue)
    - {source: outbox, to: [127.0.0.1:7101], queue: inbox}   # when the destination is up

Every node serves message queues (cohort queue). With lock: raft they are
replicated on the cluster's log by default (queues: replicated): a put is
acknowledged once a majority has it, and every node serves every queue.
queues: local gives each node its own (persistent in data_dir/storage/queues,
or in memory without data_dir). A node whose lock is a textbook algorithm
has local queues, and so does one that relays unless it says queues:
replicated — then it relays from the replicated queue, and it alone should.

A node that joins a running cluster (whose members set members: true) lists
no peers; it names one member to join through, with --join or in node.yaml:
  id: 7                         # an id no other member has
  join: 0@127.0.0.1:7000        # a member's id and transport address
  listen: 127.0.0.1:7007
  api: 127.0.0.1:7107
  secret_file: cluster.secret   # the cluster's credentials, as any member
  data_dir: ./n7                # its copy of the replicated logs, once a voter
It runs the membership and key-value service (and the DHT and Scribe, with
dht: true), and, with lock: raft, a copy of the replicated logs of the
locks, groups and queues: it serves locks, elections, groups and queues
once an operator adds it to their voters (cohort cluster add 7); until
then it answers 503, saying so. Its lock, group, queues and queue_limits
must be the cluster's: a node that joins with others is refused as it
starts (exit 2, naming both), and cohort cluster add refuses a member
that announces others.

A node restarted under its old id with its data_dir emptied — a founder,
or, with lock: raft, a node that joined — is refused as it starts (exit
2, naming the directory and a founder that heard it with state): the
founders record, in their data_dir, the nodes they heard with state. It
would otherwise rejoin as a voter that forgot its vote and its log.
Restore the directory, or remove the member (cohort cluster remove 7) and
join under a new id.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfgPath == "" {
				return usageErr("--config: missing")
			}
			c, err := loadNodeConfig(cfgPath, join)
			if err != nil {
				return usageErr("%v", err)
			}
			tuneGC()
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return runNode(ctx, c, log, nil)
		},
	}
	cmd.Flags().StringVar(&cfgPath, "config", "", "node configuration file (YAML)")
	cmd.Flags().StringVar(&join, "join", "", "join a running cluster through this member, ID@HOST:PORT (overrides join: in node.yaml)")
	return cmd
}

// runNode runs a node until ctx ends. ready, if set, receives the API
// address once the node serves.
func runNode(ctx context.Context, c *nodeConfig, log *slog.Logger, ready func(api string)) error {
	algo, err := lockAlgorithm(c.Lock)
	if err != nil {
		return usageErr("lock: %v", err)
	}
	peers := map[proc.ID]string{}
	for id, addr := range c.Peers {
		if id != c.ID {
			peers[proc.ID(id)] = addr
		}
	}
	founders := len(c.Peers)
	if c.Join != "" {
		peers[c.contact] = c.contactAddr
		founders = c.ID // (it does not know how many there are: fewer than its id)
	}
	tc := transport.Config{Self: proc.ID(c.ID), Listen: c.Listen, Peers: peers, Logger: log, Joins: c.Members, LinkIdle: c.LinkIdle, MaxLinks: c.MaxLinks,
		Datagrams: c.Probes == "udp"}
	if c.Secret != "" {
		tc.Secret = []byte(c.Secret)
	} else {
		tlsc, err := transport.LoadTLS(c.TLSDir, proc.ID(c.ID))
		if err != nil {
			return usageErr("tls_dir: %v", err)
		}
		tc.TLS = tlsc
	}
	tr, err := transport.NewTCP(tc)
	if err != nil {
		return usageErr("%v", err)
	}
	// Services named in run: start at boot on every node, under their
	// FAMILY/NAME; a peer's message for one starts it here too.
	extra := map[string]proc.Algorithm{}
	for _, name := range c.Run {
		fam, an, _ := strings.Cut(name, "/")
		a, err := registry.Find(fam, an)
		if err != nil {
			return usageErr("run: %q: %v", name, err)
		}
		extra[name] = a
	}
	galgo, err := groupAlgorithm(c.Group)
	if err != nil {
		return usageErr("group: %v", err)
	}
	nc := node.Config{ID: proc.ID(c.ID), N: founders, Transport: tr, Lock: algo, Group: galgo,
		Election: c.Election.leaderConfig(), Run: extra, Token: c.APIToken, Logger: log, MaxServices: c.Services,
		LockIdle: c.LockIdle, LockMaxTTL: c.LockMaxTTL,
		Members: c.Members, Contact: c.contact, LocalQueues: c.Queues == "local", DHT: c.DHT}
	if c.Join != "" && c.Lock == "raft" && c.DataDir == "" {
		log.Warn("no data_dir: this node keeps its copy of the replicated logs in memory; do not add it to the voters (cohort cluster add), for a voter that forgets its log at a restart can undo what the cluster acknowledged")
	}
	nc.MembersParams.Period = c.Gossip
	nc.QueueLimits = c.replicatedLimits()
	nc.Queues.MaxQueueBytes, nc.Queues.MaxQueues = c.QueueLimit.Bytes, c.QueueLimit.Queues
	for _, r := range c.Relays {
		nc.Relays = append(nc.Relays, node.Relay{Source: r.Source, To: r.To, Queue: r.Queue})
	}
	if c.DataDir != "" {
		nc.DataDir = filepath.Join(c.DataDir, "storage") // the services' logs
	}
	if c.Trace != "" {
		f, resume, err := live.OpenTrace(c.Trace, proc.ID(c.ID))
		if err != nil {
			return usageErr("trace: %v", err)
		}
		defer f.Close()
		nc.Trace, nc.TraceFamily, nc.TraceAlgo, nc.TraceResume = f, algo.Family, algo.Name, resume
		nc.TraceStates = c.States == nil || *c.States
		if len(c.Run) > 0 { // the trace is named after the first service run at boot
			a := extra[c.Run[0]]
			nc.TraceFamily, nc.TraceAlgo = a.Family, a.Name
		}
	}
	if c.TraceDir != "" {
		nc.TraceDir = c.TraceDir
		nc.TraceStates = c.States == nil || *c.States
	}
	n, err := node.New(nc)
	if err != nil {
		return usageErr("%v", err)
	}
	defer n.Close()
	for _, name := range c.Campaign {
		if err := n.Campaign(ctx, name); err != nil {
			return usageErr("campaign: %v", err)
		}
	}
	ln, err := net.Listen("tcp", c.API)
	if err != nil {
		return &exitError{1, fmt.Errorf("api: %w", err)}
	}
	srv := httpapi.NewServer(n.Handler(), httpapi.Limits{MaxConns: c.APIConns})
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("node up", "id", c.ID, "listen", c.Listen, "api", ln.Addr().String(), "lock", algo.Name)
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return &exitError{1, err}
		}
	}
	log.Info("shutting down", "id", c.ID)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// apiHandler serves a node's HTTP API: the locks under /v1/ and the
// Prometheus metrics at /metrics.
var yamlUnknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type [\w.]*?(\w+)$`)

// explainYAML rewrites the YAML decoder's report of an unknown field —
// "line 3: field peerz not found in type main.nodeConfig" — as Cohort's
// errors read: "node.yaml:3: unknown field "peerz" (did you mean
// "peers"?)", listing the known fields when none is close.
func explainYAML(path string, data []byte, err error, root reflect.Type) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return fmt.Errorf("%s: %v", path, err)
	}
	fields := map[string][]string{} // Go type name → its YAML field names
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || fields[t.Name()] != nil {
			return
		}
		names := []string{}
		fields[t.Name()] = names
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			names = append(names, name)
			walk(f.Type)
		}
		fields[t.Name()] = names
	}
	walk(root)
	var msgs []string
	for _, e := range te.Errors {
		m := yamlUnknownField.FindStringSubmatch(e)
		var known []string
		if m != nil {
			known = fields[m[3]]
		}
		if known == nil {
			msgs = append(msgs, fmt.Sprintf("%s: %s", path, nameTheKey(data, e)))
			continue
		}
		hint := suggest.DidYouMean(m[2], known)
		if hint == "" {
			hint = fmt.Sprintf(" (want one of %s)", strings.Join(known, ", "))
		}
		msgs = append(msgs, fmt.Sprintf("%s:%s: unknown field %q%s", path, m[1], m[2], hint))
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// yamlBadValue is yaml.v3's text for a value of the wrong type.
var yamlBadValue = regexp.MustCompile(`^line (\d+): cannot unmarshal (.*) into (\S+)$`)

// nameTheKey adds to a "line N: cannot unmarshal" error the key written on
// that line, and what a duration looks like.
func nameTheKey(data []byte, e string) string {
	m := yamlBadValue.FindStringSubmatch(e)
	if m == nil {
		return e
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return e
	}
	key, _, ok := strings.Cut(strings.TrimLeft(lines[n-1], " -"), ":")
	if !ok || key == "" || strings.ContainsAny(key, " {[") {
		return e
	}
	msg := fmt.Sprintf("line %s: %s: cannot unmarshal %s into %s", m[1], key, m[2], m[3])
	if m[3] == "time.Duration" {
		msg += " (want a duration such as 500ms, 30s or 5m)"
	}
	return msg
}

// lockAlgorithm is what node.yaml's lock names: "raft", the replicated
// lock service, or a mutual exclusion algorithm.
func lockAlgorithm(name string) (proc.Algorithm, error) {
	if name == "raft" {
		return lock.ReplicatedAlgorithm(consensus.DefaultConfig), nil
	}
	a, err := registry.Find("mutex", name)
	if err != nil {
		return a, fmt.Errorf("%w (or raft, the replicated log)", err)
	}
	return a, nil
}

// groupAlgorithm is what node.yaml's group names: "raft", the groups on
// the replicated log, or a multicast algorithm.
func groupAlgorithm(name string) (proc.Algorithm, error) {
	if name == "raft" {
		return group.ReplicatedAlgorithm(consensus.DefaultConfig), nil
	}
	a, err := group.Algorithm(name)
	if err != nil {
		return a, fmt.Errorf("%w (or raft, the replicated log)", err)
	}
	return a, nil
}
