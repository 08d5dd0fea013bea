package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/cohort-go/cohort/group"
	"github.com/cohort-go/cohort/lock"
)

// The restart benchmark kills every process of a cluster at once and
// starts them all again — a power cut, or an operator's careless
// `killall -9` — and measures how long the cluster takes to serve again,
// and whether it kept its word:
//
//   - before each cut, a client takes lock "restart" and releases it, and
//     sends messages to group "restart"; the cut comes right after their
//     acknowledgements;
//   - after it, from the moment the processes are started: the time until
//     a new session holds the lock (its fencing token must be above every
//     token handed out before), and until a new message is acknowledged;
//     recovery is the later of the two;
//   - then every node must deliver every message acknowledged before the
//     cut, at its acknowledged position.

// RestartConfig configures RunRestart.
type RestartConfig struct {
	Nodes       int // default 5
	Runs        int // cuts; default 5
	Messages    int // group messages acknowledged before each cut; default 100
	NodeCommand func(config string) *exec.Cmd
	Progress    func(format string, args ...any) // nil: quiet
}

// RestartRun is one cut and recovery.
type RestartRun struct {
	LockMs      float64 `json:"lock_ms"`      // start of the processes to a grant
	GroupMs     float64 `json:"group_ms"`     // to an acknowledged send
	RecoveredMs float64 `json:"recovered_ms"` // the later
	TokenBefore uint64  `json:"token_before"` // the last token before the cut
	TokenAfter  uint64  `json:"token_after"`  // the first after
}

// RestartResult is the JSON contract of `cohort bench restart`.
type RestartResult struct {
	Nodes           int          `json:"nodes"`
	Runs            []RestartRun `json:"runs"`
	RecoveredP50Ms  float64      `json:"recovered_p50_ms"`
	RecoveredMaxMs  float64      `json:"recovered_max_ms"`
	Acknowledged    int          `json:"messages_acknowledged"` // over all runs, before and after the cuts
	CheckedAtNodes  int          `json:"deliveries_checked"`    // deliveries compared, over every node
	Lost            int          `json:"lost"`                  // acknowledged positions some node did not deliver as acknowledged
	Anomalies       []string     `json:"anomalies"`
	TokensIncreased bool         `json:"tokens_increased"`
}

// RunRestart runs the benchmark.
func RunRestart(ctx context.Context, cfg RestartConfig) (RestartResult, error) {
	if cfg.Nodes == 0 {
		cfg.Nodes = 5
	}
	if cfg.Runs == 0 {
		cfg.Runs = 5
	}
	if cfg.Messages == 0 {
		cfg.Messages = 100
	}
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			cfg.Progress(format, args...)
		}
	}
	res := RestartResult{Nodes: cfg.Nodes, Runs: []RestartRun{}, Anomalies: []string{}, TokensIncreased: true}
	switch {
	case cfg.Nodes < 3:
		return res, fmt.Errorf("nodes %d: want at least 3", cfg.Nodes)
	case cfg.Runs < 1 || cfg.Messages < 1:
		return res, fmt.Errorf("runs %d, messages %d: want at least 1 of each", cfg.Runs, cfg.Messages)
	case cfg.Runs*(cfg.Messages+1) > 1000:
		return res, fmt.Errorf("runs %d × messages %d: at most 1,000 messages in all, so that every node keeps them all to check", cfg.Runs, cfg.Messages)
	case cfg.NodeCommand == nil:
		return res, errors.New("no node command")
	}
	ecfg := &ElectConfig{Nodes: cfg.Nodes, Runs: 1, NodeCommand: cfg.NodeCommand, Replicated: true, EtcdTTL: 2 * time.Second}
	if cfg.Progress != nil {
		ecfg.Progress = progressWriter(say)
	}
	cl, err := startProcCluster(ctx, ecfg)
	if err != nil {
		return res, err
	}
	defer cl.stop()

	acked := map[uint64]string{} // position → body, over every run
	var token uint64             // the highest token handed out so far
	var recovered []time.Duration
	for run := range cfg.Runs {
		// Before the cut: the lock once, then the messages.
		t, err := lockOnce(ctx, cl, 20*time.Second)
		if err != nil {
			return res, fmt.Errorf("run %d, before the cut: %w", run+1, err)
		}
		if t <= token {
			res.TokensIncreased = false
			res.Anomalies = append(res.Anomalies, fmt.Sprintf("run %d: token %d after %d", run+1, t, token))
		}
		token = max(token, t)
		gc := &group.Client{Endpoints: rotate(cl.apis, run), HTTP: cl.hc}
		for k := range cfg.Messages {
			body := fmt.Sprintf("r%d-%d", run, k)
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, pos, err := gc.Send(sctx, "restart", []byte(body))
			cancel()
			if err != nil {
				return res, fmt.Errorf("run %d, before the cut: send: %w", run+1, err)
			}
			if prev, dup := acked[pos]; dup {
				res.Anomalies = append(res.Anomalies, fmt.Sprintf("group: %s and %s both acknowledged at position %d", prev, body, pos))
			}
			acked[pos] = body
		}

		say("run %d: kill -9 every node", run+1)
		for i := range cfg.Nodes {
			_ = cl.cmds[i].Process.Signal(syscall.SIGKILL)
		}
		for i := range cfg.Nodes {
			<-cl.exited[i]
		}
		start := time.Now()
		for i := range cfg.Nodes {
			if err := cl.start(i); err != nil {
				return res, err
			}
		}
		r := RestartRun{TokenBefore: token}
		lockDone, groupDone := make(chan error, 1), make(chan error, 1)
		go func() {
			t, err := lockOnce(ctx, cl, 30*time.Second)
			r.LockMs, r.TokenAfter = millis(time.Since(start)), t
			lockDone <- err
		}()
		go func() {
			err := sendOnce(ctx, cl, fmt.Sprintf("r%d-after", run), 30*time.Second, acked)
			r.GroupMs = millis(time.Since(start))
			groupDone <- err
		}()
		if err := errors.Join(<-lockDone, <-groupDone); err != nil {
			return res, fmt.Errorf("run %d, after the cut: %w", run+1, err)
		}
		if r.TokenAfter <= token {
			res.TokensIncreased = false
			res.Anomalies = append(res.Anomalies, fmt.Sprintf("run %d: token %d after the restart, %d before", run+1, r.TokenAfter, token))
		}
		token = max(token, r.TokenAfter)
		r.RecoveredMs = max(r.LockMs, r.GroupMs)
		recovered = append(recovered, time.Duration(r.RecoveredMs*float64(time.Millisecond)))
		res.Runs = append(res.Runs, r)
		say("run %d: a grant after %.0f ms, a send after %.0f ms", run+1, r.LockMs, r.GroupMs)
	}
	res.Acknowledged = len(acked)
	say("checking %d messages at every node", len(acked))
	checked, anomalies := checkGroup(ctx, endpoints{cl.apis, cl.hc}, "restart", acked, 1)
	res.CheckedAtNodes = checked
	res.Lost = len(anomalies)
	res.Anomalies = append(res.Anomalies, anomalies...)
	slices.Sort(recovered)
	res.RecoveredP50Ms, res.RecoveredMaxMs = millis(percentile(recovered, 50)), millis(recovered[len(recovered)-1])
	return res, nil
}

// lockOnce opens a session on any node that answers, takes lock
// "restart" and releases it, and returns the fencing token; it retries
// until limit.
func lockOnce(ctx context.Context, cl *procCluster, limit time.Duration) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for k := 0; ctx.Err() == nil; k++ {
		lc := &lock.Client{Endpoints: rotate(cl.apis, k), HTTP: cl.hc}
		actx, acancel := context.WithTimeout(ctx, time.Second)
		s, err := lc.OpenSession(actx, 5*time.Second)
		if err == nil {
			var t uint64
			if t, err = s.Lock(actx, "restart"); err == nil {
				err = s.Unlock(actx, "restart")
				_ = s.Close(actx)
				acancel()
				return t, err
			}
			_ = s.Close(actx)
		}
		acancel()
		last = err
		sleepCtx(ctx, 5*time.Millisecond)
	}
	return 0, fmt.Errorf("no grant within %v: %w", limit, last)
}

// sendOnce sends body to group "restart" through any node that answers,
// until it is acknowledged or limit passes, and records it in acked.
func sendOnce(ctx context.Context, cl *procCluster, body string, limit time.Duration, acked map[uint64]string) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last error
	for k := 0; ctx.Err() == nil; k++ {
		gc := &group.Client{Endpoints: rotate(cl.apis, k), HTTP: cl.hc}
		sctx, scancel := context.WithTimeout(ctx, time.Second)
		_, pos, err := gc.Send(sctx, "restart", []byte(body))
		scancel()
		if err == nil {
			acked[pos] = body
			return nil
		}
		last = err
		sleepCtx(ctx, 5*time.Millisecond)
	}
	return fmt.Errorf("no send acknowledged within %v: %w", limit, last)
}
