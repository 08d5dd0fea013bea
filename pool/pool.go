package pool

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs tasks on goroutines as the model's pool runs requests on
// threads: Size resident workers wait for tasks, and a task that finds
// none idle gets a goroutine created for it, which ends with it. So the
// size never limits how many tasks run at once — it decides how many of
// them find a worker ready.
//
// A pool with Config.Auto measures the model's quantities and resizes
// itself to n* (Optimal) every Config.Every:
//
//   - r, the concurrency: at every Go, the number of tasks in progress,
//     this one included, into a histogram that halves at every resize (so
//     it follows a changing load);
//   - c₁, the creation cost: the time from go to the new goroutine
//     running, less the time from handing a task to a resident worker to
//     it running (what a ready worker saves), both measured on the tasks,
//     and calibrated when the pool starts; plus Config.CreateCost, for
//     workers that build something costly when they start. In Go the
//     difference is about nothing or below: starting a goroutine (about
//     1µs) is no dearer than waking a parked one, so a bare pool does not
//     pay, and with c₁ ≤ 0 the pool sizes itself to 0 — the model's
//     answer when a ready thread saves nothing;
//   - c₂, the maintenance cost: a parked goroutine is never scheduled, so
//     it causes no context switches — the textbook's c₂ is nearly zero in
//     Go. What an idle worker does cost is its stack, which every garbage
//     collection scans: c₂ is the measured scan time of one parked
//     goroutine (calibrated at start) times the collections per period,
//     plus Config.IdleCost, a configured price of an idle worker per
//     second, for a program that counts memory as a cost too.
//
// A period of the model is one arrival (one Go): c₂ per period is the
// cost per second divided by the arrivals per second. The histogram is
// the concurrency as the arrivals see it.
//
// Its methods are safe for concurrent use.
type Pool struct {
	cfg   Config
	tasks chan task     // unbuffered: a send succeeds when a worker waits
	quit  chan struct{} // one token stops one resident worker
	done  chan struct{}
	wg    sync.WaitGroup

	resident, active atomic.Int64
	handoffs         atomic.Int64
	spawned          atomic.Int64
	lastResize       atomic.Int64 // unix ns
	resizes          atomic.Int64

	// Latencies, summed in nanoseconds, for c₁.
	spawnNs, spawnN, handNs, handN atomic.Int64

	mu      sync.Mutex
	closed  bool
	target  int
	hist    []float64
	arrived int64 // arrivals since the last resize
	gcLast  uint64
	c1, c2  float64 // the last estimates, ns (c2 per arrival)
}

type task struct {
	f  func()
	t0 time.Time
}

// Config configures a Pool.
type Config struct {
	// Size is the number of resident workers: the pool's size, or with
	// Auto its initial size. 0 is a pool of none: every task gets a new
	// goroutine.
	Size int
	// Auto makes the pool resize itself to n* (see Pool).
	Auto bool
	// Max bounds the size, and the concurrency the histogram records
	// apart (more is counted as Max). 0 means 1024; at most 1<<16.
	Max int
	// Every is how often an Auto pool resizes. 0 means 50ms.
	Every time.Duration
	// IdleCost is added to c₂: the price of one idle worker per second,
	// in nanoseconds of work it is judged worth. 0 adds nothing.
	IdleCost float64
	// CreateCost is added to the measured c₁: what a new worker costs
	// beyond its goroutine (a buffer, a connection), in nanoseconds.
	CreateCost float64
}

// Defaults of Config's zero fields.
const (
	DefaultMax   = 1024
	MaxMax       = 1 << 16
	DefaultEvery = 50 * time.Millisecond
)

// Validate names the bad field.
func (c Config) Validate() error {
	switch {
	case c.Max < 0 || c.Max > MaxMax:
		return fmt.Errorf("max = %d: want 0 (default %d) to %d", c.Max, DefaultMax, MaxMax)
	case c.Size < 0 || c.Size > max(c.Max, DefaultMax):
		return fmt.Errorf("size = %d: want 0 to max", c.Size)
	case c.Every < 0:
		return fmt.Errorf("every = %v: must not be negative", c.Every)
	case !(c.IdleCost >= 0) || c.IdleCost > 1e18:
		return fmt.Errorf("idle cost = %v: must be a non-negative number", c.IdleCost)
	case !(c.CreateCost >= 0) || c.CreateCost > 1e18:
		return fmt.Errorf("create cost = %v: must be a non-negative number", c.CreateCost)
	}
	return nil
}

// ErrClosed is returned by Go on a closed pool.
var ErrClosed = errors.New("pool closed")

// New starts a pool.
func New(cfg Config) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Max == 0 {
		cfg.Max = DefaultMax
	}
	if cfg.Every == 0 {
		cfg.Every = DefaultEvery
	}
	cfg.Size = min(cfg.Size, cfg.Max)
	p := &Pool{cfg: cfg, tasks: make(chan task), quit: make(chan struct{}, cfg.Max), done: make(chan struct{}),
		hist: make([]float64, cfg.Max+1)}
	if cfg.Auto {
		cal := calibrate()
		p.c1 = cal.spawn - cal.hand + cfg.CreateCost
		p.spawnNs.Store(int64(cal.spawn))
		p.spawnN.Store(1)
		p.handNs.Store(int64(cal.hand))
		p.handN.Store(1)
		p.gcLast = gcCycles()
	}
	p.lastResize.Store(time.Now().UnixNano())
	p.mu.Lock()
	p.setSize(cfg.Size)
	p.mu.Unlock()
	return p, nil
}

// Go runs f on a resident worker if one is idle, or else on a new
// goroutine.
func (p *Pool) Go(f func()) error {
	r := p.active.Add(1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.active.Add(-1)
		return ErrClosed
	}
	p.hist[min(int(r), p.cfg.Max)]++
	p.arrived++
	p.wg.Add(1) // under mu: Close waits for every task it let in
	p.mu.Unlock()
	t := task{f: f, t0: time.Now()}
	select {
	case p.tasks <- t:
		p.handoffs.Add(1)
	default:
		p.spawned.Add(1)
		go func() {
			p.spawnNs.Add(int64(time.Since(t.t0)))
			p.spawnN.Add(1)
			p.run(t.f)
		}()
	}
	if p.cfg.Auto {
		if last := p.lastResize.Load(); time.Now().UnixNano()-last >= int64(p.cfg.Every) && p.lastResize.CompareAndSwap(last, time.Now().UnixNano()) {
			p.resize()
		}
	}
	return nil
}

func (p *Pool) run(f func()) {
	defer p.wg.Done()
	defer p.active.Add(-1)
	f()
}

// worker is a resident worker: it runs tasks until a quit token or
// Close stops it.
func (p *Pool) worker() {
	defer p.wg.Done()
	defer p.resident.Add(-1)
	for {
		select {
		case t := <-p.tasks:
			p.handNs.Add(int64(time.Since(t.t0)))
			p.handN.Add(1)
			p.run(t.f)
		case <-p.quit:
			return
		case <-p.done:
			return
		}
	}
}

// setSize makes the pool n workers, once the quit tokens sent are
// taken. The caller holds mu.
func (p *Pool) setSize(n int) {
	p.target = n
	cur := int(p.resident.Load()) - len(p.quit)
	for cur < n {
		select {
		case <-p.quit: // a worker told to stop stays
		default:
			p.resident.Add(1)
			p.wg.Add(1)
			go p.worker()
		}
		cur++
	}
	for ; cur > n; cur-- {
		select {
		case p.quit <- struct{}{}:
		default:
		}
	}
}

// Resize sets the size by hand (an Auto pool will change it again).
func (p *Pool) Resize(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.setSize(max(0, min(n, p.cfg.Max)))
	}
}

// resize estimates c₁ and c₂, sizes the pool to n*, and halves the
// histogram.
func (p *Pool) resize() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.arrived == 0 {
		return
	}
	p.resizes.Add(1)
	spawn := float64(p.spawnNs.Load()) / float64(max(1, p.spawnN.Load()))
	hand := float64(p.handNs.Load()) / float64(max(1, p.handN.Load()))
	p.c1 = spawn - hand + p.cfg.CreateCost
	gc := gcCycles()
	perSecond := p.cfg.IdleCost
	every := float64(p.cfg.Every) / float64(time.Second)
	scan := scanCost()
	p.c2 = (scan*float64(gc-p.gcLast) + perSecond*every) / float64(p.arrived)
	p.gcLast = gc
	n := 0 // a ready worker saves nothing
	if p.c1 > 0 {
		var err error
		if n, err = Optimal(Costs{C1: p.c1, C2: p.c2}, p.hist); err != nil {
			n = p.target
		}
	}
	p.setSize(n)
	for i := range p.hist {
		p.hist[i] /= 2
	}
	p.arrived = 0
}

// Stats is what a pool measured.
type Stats struct {
	Size     int `json:"size"`
	Resident int `json:"resident"`
	Active   int `json:"active"`
	// Handoffs and Spawned count the tasks a resident worker ran and
	// those that got a new goroutine.
	Handoffs int64 `json:"handoffs"`
	Spawned  int64 `json:"spawned"`
	Resizes  int64 `json:"resizes"`
	// C1 and C2 are the last estimates, in nanoseconds (C2 per arrival);
	// zero for a pool that is not Auto. C1 ≤ 0: a ready worker saves
	// nothing.
	C1 float64 `json:"c1_ns"`
	C2 float64 `json:"c2_ns"`
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Size: p.target, Resident: int(p.resident.Load()), Active: int(p.active.Load()),
		Handoffs: p.handoffs.Load(), Spawned: p.spawned.Load(), Resizes: p.resizes.Load(), C1: p.c1, C2: p.c2}
}

// Histogram returns a copy of the (decayed) concurrency histogram, cut
// after its last non-zero weight.
func (p *Pool) Histogram() Histogram {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := len(p.hist)
	for end > 0 && p.hist[end-1] == 0 {
		end--
	}
	return slices.Clone(p.hist[:end])
}

// Close stops the resident workers and waits for every task to end.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	p.mu.Unlock()
	p.wg.Wait()
}

// calibration: the time from go to a new goroutine running, from a
// channel send to a parked goroutine running, and their difference, c₁;
// measured once per process (medians of a few hundred).
type calibration struct{ spawn, hand float64 }

var (
	calOnce sync.Once
	cal     calibration
	scanNs  float64
)

func calibrate() calibration {
	calOnce.Do(func() {
		const reps = 201
		spawn, hand := make([]float64, reps), make([]float64, reps)
		ch := make(chan time.Time)
		got := make(chan time.Duration)
		go func() {
			for t0 := range ch {
				got <- time.Since(t0)
			}
		}()
		for i := range reps {
			t0 := time.Now()
			go func() { got <- time.Since(t0) }()
			spawn[i] = float64(<-got)
			time.Sleep(10 * time.Microsecond) // let the receiver park
			ch <- time.Now()
			hand[i] = float64(<-got)
		}
		close(ch)
		slices.Sort(spawn)
		slices.Sort(hand)
		cal = calibration{spawn: spawn[reps/2], hand: hand[reps/2]}
		scanNs = measureScan()
	})
	return cal
}

// measureScan is the garbage collector's time per parked goroutine: a
// collection with 512 parked goroutines less one without, per goroutine
// (medians of three).
func measureScan() float64 {
	const k = 512
	gcTime := func() float64 {
		var ds []float64
		for range 3 {
			t0 := time.Now()
			runtime.GC()
			ds = append(ds, float64(time.Since(t0)))
		}
		slices.Sort(ds)
		return ds[1]
	}
	base := gcTime()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() { <-stop })
	}
	with := gcTime()
	close(stop)
	wg.Wait()
	return max(with-base, 0) / k
}

func scanCost() float64 {
	calibrate()
	return scanNs
}

// gcCycles is the number of garbage collections the process has run.
func gcCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
