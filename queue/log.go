package queue

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cohort-go/cohort/live/wal"
)

// The segment log. A persistent manager's directory holds segments
// named by number, 00000000000000000001.seg …; each is an 8-byte magic
// header and records framed as in package wal (length, CRC-32C, data),
// decoded by wal.Decode, which also tells a torn tail from corruption.
// Only the last segment (the head) is appended to.
//
// Preallocation: the head's file is extended with zeros (fallocate)
// ahead of its records, a chunk of preallocChunk bytes at a time, and
// records are written into that space. Such a write leaves the file's
// size alone, so its fdatasync need not also journal a new size, as an
// append's does (the nodes' write-ahead log, package wal, does the same,
// as etcd's WAL does); only the sync after a new chunk pays for one. The
// zeros after the last record end a segment: wal.Decode reads a record
// header of zeros as the end of the records (no record has one), and
// replay accepts a tail of zeros in any segment. A torn tail — other
// bytes after the last whole record — is cut off, in the last segment
// only, as before.
//
// Group commit: puts and acks are handed to one committer goroutine,
// which writes every commit waiting at once — one record each — and
// syncs them with one fdatasync before any is acknowledged. Under load
// the commits that arrive during one sync share the next.
//
// Compaction works on the oldest segment only: once it holds no message
// still unacknowledged it is deleted; when its live messages are few (at
// most a quarter of a segment), or when the log holds more than
// maxSegments segments (messages left unacknowledged in the oldest pin
// everything after it), they are put again, with their ids, at the head,
// synced, and then it is deleted. The log thus holds at most about
// maxSegments segments beyond its live messages. Working from the oldest
// keeps acks sound: an ack always follows its put in the log, so the
// acks in the oldest segment are of puts in it, and deleting it cannot
// bring back a message acknowledged in a later one.
const segMagic = "cohortQ1"

// ErrCorrupt is returned (wrapped) by Open when synced records are
// damaged (and not a torn tail, which is cut off).
var ErrCorrupt = errors.New("queue log corrupt")

// rewriteChunk bounds the record of a compaction's puts.
const rewriteChunk = 4 << 20

// preallocChunk is how much space the head allocates ahead of its
// records, in bytes (at most SegmentBytes): one sync in about
// preallocChunk/record-size pays for a size change, 1 in 7,000 for a
// put of 128 bytes.
const preallocChunk = 1 << 20

// maxSegments is how many segments the log keeps before it copies the
// oldest one's live messages forward whatever their size.
const maxSegments = 4

type segLog struct {
	m    *Manager
	fs   FS
	dir  string
	lock *os.File // flock on the directory's LOCK file (OS only)

	// The committer's.
	segs      []uint64 // numbers, oldest first; the last is the head
	head      File
	headSize  int64 // bytes written: header and records
	headAlloc int64 // bytes in the file: those and the zeros after them
	buf       []byte

	// Under m.mu.
	live       map[uint64]map[*entry]*queue // segment → its live messages
	liveBytes  map[uint64]int64
	durOrigins map[string]uint64 // origins of durable puts

	pmu     sync.Mutex
	pending []*commit
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	werr    error
	nsegs   atomic.Int32
	once    sync.Once

	records, syncs atomic.Uint64 // records written, fdatasyncs (group commit: fewer)
}

func segName(no uint64) string { return fmt.Sprintf("%020d.seg", no) }

func (l *segLog) path(no uint64) string { return path.Join(l.dir, segName(no)) }

// openLog replays the log in m.cfg.Dir into m and starts a new head
// segment.
func openLog(m *Manager) (*segLog, error) {
	l := &segLog{m: m, fs: m.cfg.FS, dir: m.cfg.Dir,
		live: map[uint64]map[*entry]*queue{}, liveBytes: map[uint64]int64{}, durOrigins: map[string]uint64{},
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	if err := l.fs.MkdirAll(l.dir); err != nil {
		return nil, err
	}
	m.seg = l // the queues replay creates are persistent
	if l.fs == OS {
		f, err := os.OpenFile(path.Join(l.dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return nil, fmt.Errorf("queue directory %s is in use by another process (%v)", l.dir, err)
		}
		l.lock = f
	}
	if err := l.replay(); err != nil {
		l.closeLock()
		return nil, err
	}
	if err := l.roll(); err != nil {
		l.closeLock()
		return nil, err
	}
	return l, nil
}

func (l *segLog) closeLock() {
	if l.lock != nil {
		l.lock.Close()
	}
}

func (l *segLog) replay() error {
	names, err := l.fs.List(l.dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		base, ok := strings.CutSuffix(n, ".seg")
		if !ok {
			continue
		}
		no, err := strconv.ParseUint(base, 10, 64)
		if err != nil || segName(no) != n {
			continue
		}
		l.segs = append(l.segs, no)
	}
	sort.Slice(l.segs, func(i, j int) bool { return l.segs[i] < l.segs[j] })
	m := l.m
	acked := map[uint64]bool{}
	var maxID uint64
	var keep []uint64
	for i, no := range l.segs {
		last := i == len(l.segs)-1
		name := l.path(no)
		data, err := l.fs.ReadFile(name)
		if err != nil {
			return err
		}
		if tornHeader(data) {
			if !last {
				return fmt.Errorf("%w: %s: a segment of %d bytes without its header", ErrCorrupt, name, len(data))
			}
			// Torn while it was created: nothing in it was acknowledged.
			m.log.Warn("queue log: removed a segment torn while it was created", "segment", name, "bytes", len(data))
			if err := l.fs.Remove(name); err != nil {
				return err
			}
			if err := l.fs.SyncDir(l.dir); err != nil {
				return err
			}
			continue
		}
		if len(data) < len(segMagic) || string(data[:len(segMagic)]) != segMagic {
			return fmt.Errorf("%w: %s: not a queue segment (header %q)", ErrCorrupt, name, data[:min(len(data), len(segMagic))])
		}
		recs, good, err := wal.Decode(data[len(segMagic):])
		if err != nil {
			return fmt.Errorf("%s: %w: %w", name, ErrCorrupt, err)
		}
		if tail := data[len(segMagic)+good:]; !allZero(tail) { // zeros: space preallocated
			cut := len(tail) - countZeroSuffix(tail)
			if !last {
				return fmt.Errorf("%w: %s: %d bytes of damage before the last segment", ErrCorrupt, name, cut)
			}
			f, err := l.fs.Open(name)
			if err != nil {
				return err
			}
			err = errors.Join(f.Truncate(int64(len(segMagic)+good)), f.Sync(), f.Close())
			if err != nil {
				return err
			}
			m.log.Warn("queue log: cut off a torn or corrupted tail (writes never acknowledged)", "segment", name, "bytes", cut, "records_kept", len(recs))
		}
		keep = append(keep, no)
		for _, rec := range recs {
			st, ops, isStart, err := decodeRecord(rec)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
			}
			if isStart {
				m.nextID = max(m.nextID, st.nextID)
				for k, v := range st.origins {
					l.durOrigins[k] = max(l.durOrigins[k], v)
				}
				continue
			}
			for _, o := range ops {
				maxID = max(maxID, o.id)
				q, err := m.q(o.queue)
				if err != nil {
					return fmt.Errorf("%w: %s: %w", ErrCorrupt, name, err)
				}
				switch o.kind {
				case opPut:
					if o.origin != "" {
						l.durOrigins[o.origin] = max(l.durOrigins[o.origin], o.seq)
					}
					if acked[o.id] {
						continue
					}
					if e, ok := q.all[o.id]; ok { // put again by compaction
						l.untrack(e)
						e.seg = no
						l.track(e, q)
						continue
					}
					e := &entry{id: o.id, body: bytes.Clone(o.body), seg: no, readyIdx: -1, leaseIdx: -1}
					q.all[o.id] = e
					q.bytes += int64(len(e.body))
					l.track(e, q)
				case opAck:
					acked[o.id] = true
					if e, ok := q.all[o.id]; ok {
						delete(q.all, o.id)
						q.bytes -= int64(len(e.body))
						l.untrack(e)
					}
				}
			}
		}
	}
	l.segs = keep
	m.nextID = max(m.nextID, maxID+1)
	for k, v := range l.durOrigins {
		m.origins[k] = v
	}
	m.forgetOrigins() // a log written before the bound, or by a node with another
	for _, q := range m.queues {
		for _, e := range q.all {
			q.ready = append(q.ready, e)
		}
		sort.Slice(q.ready, func(i, j int) bool { return q.ready[i].id < q.ready[j].id })
		for i, e := range q.ready {
			e.readyIdx = i
		}
	}
	return nil
}

// track and untrack keep the live messages of each segment; the caller
// holds m.mu (or replays).
func (l *segLog) track(e *entry, q *queue) {
	s := l.live[e.seg]
	if s == nil {
		s = map[*entry]*queue{}
		l.live[e.seg] = s
	}
	s[e] = q
	l.liveBytes[e.seg] += int64(len(e.body))
}

func (l *segLog) untrack(e *entry) {
	if s := l.live[e.seg]; s != nil {
		if _, ok := s[e]; ok {
			delete(s, e)
			l.liveBytes[e.seg] -= int64(len(e.body))
		}
		if len(s) == 0 {
			delete(l.live, e.seg)
			delete(l.liveBytes, e.seg)
		}
	}
}

func (l *segLog) durableOrigin(origin string, seq uint64) {
	l.durOrigins[origin] = max(l.durOrigins[origin], seq)
}

// roll starts a new head segment: its start record holds the next id and
// the origins, so that the older segments can go. The committer's (or
// Open's).
func (l *segLog) roll() error {
	no := uint64(1)
	if len(l.segs) > 0 {
		no = l.segs[len(l.segs)-1] + 1
	}
	l.m.mu.Lock()
	st := start{nextID: l.m.nextID, origins: make(map[string]uint64, len(l.durOrigins))}
	for k, v := range l.durOrigins {
		st.origins[k] = v
	}
	l.m.mu.Unlock()
	b := wal.AppendRecord([]byte(segMagic), encodeStart(st))
	f, err := l.fs.Open(l.path(no))
	if err != nil {
		return err
	}
	alloc := l.spaceFor(int64(len(b)))
	if err := f.Allocate(alloc); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		f.Close()
		return err
	}
	if l.head != nil {
		l.head.Close()
	}
	l.head, l.headSize, l.headAlloc = f, int64(len(b)), alloc
	l.segs = append(l.segs, no)
	l.nsegs.Store(int32(len(l.segs)))
	return nil
}

// submit hands a commit to the committer. The caller holds m.mu (so
// commits reach the log in the order of their ids).
func (l *segLog) submit(c *commit) {
	l.pmu.Lock()
	l.pending = append(l.pending, c)
	l.pmu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run is the committer.
func (l *segLog) run() {
	defer close(l.stopped)
	for {
		select {
		case <-l.stop:
			l.failPending(ErrClosed)
			return
		case <-l.kick:
		}
		l.pmu.Lock()
		batch := l.pending
		l.pending = nil
		for _, c := range batch {
			c.taken = true // no put joins it now (Manager.pipelinePut)
		}
		l.pmu.Unlock()
		if len(batch) == 0 {
			continue
		}
		if l.werr == nil {
			l.werr = l.write(batch)
		}
		m := l.m
		m.mu.Lock()
		if l.werr != nil {
			if m.err == nil || m.err == ErrClosed {
				m.err = fmt.Errorf("queue log: %w", l.werr)
				m.log.Error("queue log failed: the queues stop", "err", l.werr)
			}
		} else {
			for _, c := range batch {
				m.apply(c, l.segs[len(l.segs)-1])
			}
		}
		m.mu.Unlock()
		for _, c := range batch {
			c.finish(l.werr)
		}
		if l.werr == nil {
			if err := l.compact(); err != nil {
				l.werr = err
				m.mu.Lock()
				m.err = fmt.Errorf("queue log: %w", err)
				m.mu.Unlock()
				m.log.Error("queue log failed: the queues stop", "err", err)
			}
		}
	}
}

func (l *segLog) failPending(err error) {
	l.pmu.Lock()
	batch := l.pending
	l.pending = nil
	for _, c := range batch {
		c.taken = true
	}
	l.pmu.Unlock()
	for _, c := range batch {
		c.finish(err)
	}
}

// write writes a batch of commits, one record each, and syncs them.
func (l *segLog) write(batch []*commit) error {
	if l.headSize >= l.m.cfg.SegmentBytes {
		if err := l.roll(); err != nil {
			return err
		}
	}
	b := l.buf[:0]
	var ops []op
	for _, c := range batch {
		ops = ops[:0]
		for i, o := range c.ops {
			if !c.queues[i].transient {
				ops = append(ops, o)
			}
		}
		if len(ops) > 0 {
			b = wal.AppendRecord(b, encodeBatch(nil, ops))
		}
	}
	l.buf = b
	if cap(l.buf) > 8<<20 {
		l.buf = nil
	}
	if len(b) == 0 {
		return nil // barriers only: what they wait for was synced
	}
	if err := l.writeHead(b); err != nil {
		return err
	}
	l.records.Add(uint64(len(batch)))
	l.syncs.Add(1)
	return l.head.Sync()
}

// writeHead writes b after the head's records, into its preallocated
// space, allocating another chunk first if b does not fit. The caller
// syncs.
func (l *segLog) writeHead(b []byte) error {
	if end := l.headSize + int64(len(b)); end > l.headAlloc {
		alloc := l.spaceFor(end)
		if err := l.head.Allocate(alloc); err != nil {
			return err
		}
		l.headAlloc = alloc
	}
	if _, err := l.head.WriteAt(b, l.headSize); err != nil {
		return err
	}
	l.headSize += int64(len(b))
	return nil
}

// spaceFor is where the head's preallocated space ends once it holds n
// bytes: at the multiple of the chunk after n.
func (l *segLog) spaceFor(n int64) int64 {
	chunk := min(preallocChunk, max(l.m.cfg.SegmentBytes, 1))
	return (n/chunk + 1) * chunk
}

// tornHeader reports whether a segment's data is a header torn while the
// segment was created: a prefix of the magic, then zeros (preallocated
// space) or nothing. Nothing in such a segment was acknowledged.
func tornHeader(data []byte) bool {
	head := data[:min(len(data), len(segMagic))]
	if string(head) == segMagic {
		return false
	}
	i := bytes.IndexByte(head, 0)
	if i < 0 {
		i = len(head)
	}
	return bytes.HasPrefix([]byte(segMagic), head[:i]) && allZero(data[i:])
}

func allZero(b []byte) bool { return countZeroSuffix(b) == len(b) }

func countZeroSuffix(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == 0 {
		n++
	}
	return n
}

// compact deletes the oldest segments that hold nothing live, putting
// their few live messages again at the head first.
func (l *segLog) compact() error {
	m := l.m
	for len(l.segs) > 1 {
		old := l.segs[0]
		m.mu.Lock()
		if l.liveBytes[old] > m.cfg.SegmentBytes/4 && len(l.segs) <= maxSegments {
			m.mu.Unlock()
			return nil
		}
		var ops []op
		var es []*entry
		for e, q := range l.live[old] {
			ops = append(ops, op{kind: opPut, queue: q.name, id: e.id, body: e.body})
			es = append(es, e)
		}
		m.mu.Unlock()
		if len(ops) > 0 {
			sort.Slice(ops, func(i, j int) bool { return ops[i].id < ops[j].id })
			var b []byte
			for len(ops) > 0 {
				n, size := 0, 0
				for n < len(ops) && (n == 0 || size+len(ops[n].body) < rewriteChunk) {
					size += len(ops[n].body) + 32
					n++
				}
				b = wal.AppendRecord(b, encodeBatch(nil, ops[:n]))
				ops = ops[n:]
			}
			if err := l.writeHead(b); err != nil {
				return err
			}
			if err := l.head.Sync(); err != nil {
				return err
			}
			headNo := l.segs[len(l.segs)-1]
			m.mu.Lock()
			for _, e := range es {
				if q, ok := l.live[old][e]; ok {
					l.untrack(e)
					e.seg = headNo
					l.track(e, q)
				}
			}
			m.mu.Unlock()
		}
		if err := l.fs.Remove(l.path(old)); err != nil {
			return err
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
		l.segs = l.segs[1:]
		l.nsegs.Store(int32(len(l.segs)))
	}
	return nil
}

// Segments is how many segment files the log holds (for tests and
// metrics); 0 for a transient manager.
func (m *Manager) Segments() int {
	if m.seg == nil {
		return 0
	}
	return int(m.seg.nsegs.Load())
}

func (l *segLog) close() error {
	l.once.Do(func() { close(l.stop) })
	<-l.stopped
	var err error
	if l.head != nil {
		err = l.head.Close()
	}
	l.closeLock()
	return err
}
