// Package wal is stable storage on a file: an append-only log of
// checksummed records, the live host's implementation of proc.Storage.
//
// The file is a magic header followed by records, each
//
//	length  uint32, little-endian (of data)
//	crc     uint32, little-endian: CRC-32C of length and data
//	data    length bytes
//
// The rest of the file is zeros: space preallocated (fallocate) in chunks
// of PreallocChunk bytes, when the file is created and whenever the log
// grows into the end of it. A write into preallocated space leaves the
// file's size alone, so its fdatasync need not also journal a new size,
// as an append's does (etcd preallocates its WAL segments for the same
// reason). An 8-byte record header of zeros is never a record (the CRC of
// a zero length is not zero): where a record would begin, it ends the log.
//
// Appends are buffered in memory; Sync writes them with one write and
// makes them durable with fdatasync. Replace (compaction) writes the new
// log to a temporary file, syncs it, renames it over the old one and syncs
// the directory, so that a crash leaves one log or the other, whole.
//
// Open recovers a log after a crash. A torn tail — a record cut short, or
// one whose checksum fails and which nothing but zeros follows — is what a
// crash during an unsynced write leaves; it is cut off and the space after
// the last whole record zeroed again (those writes were never synced, so
// nothing acknowledged is lost; and a later, shorter write cannot leave
// pieces of them behind to be read back as records). So is damage where a
// 512-byte sector of the last write reads as zeros: it never reached the
// disk, though a later one did. Any other record that fails its checksum
// with data after it is corruption of synced data: Open refuses the log
// rather than start a process on state it no longer has.
//
// A log is locked (flock) while open: a second process opening the same
// file, such as a node started twice with one data directory, gets an
// error instead of interleaving its writes.
package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/cohort-go/cohort/internal/diskio"
)

// MaxRecord is the largest record a log holds, in bytes. A length above
// it at recovery is damage, not a record to allocate memory for.
const MaxRecord = 64 << 20

// PreallocChunk is how much file space a log allocates ahead of its
// records, in bytes: at creation, and again each time a write reaches the
// end of the space. One sync in about PreallocChunk/record-size (1 in 300
// for a lock's 200-byte entries) then pays for a size change. Open reads
// the unused rest of the chunk: a larger one (etcd's 64 MB segments) would
// slow every restart for a gain too small to measure.
const PreallocChunk = 64 << 10

const (
	sector    = 512 // the unit a disk writes whole, or not at all
	magic     = "cohortL1"
	headerLen = len(magic)
	recHeader = 8
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is returned (wrapped) by Open when synced records are
// damaged.
var ErrCorrupt = errors.New("log corrupt")

// Log is an open log. It is not safe for concurrent use.
type Log struct {
	path      string
	f         *os.File
	size      int64  // bytes of the log: header and records written
	alloc     int64  // bytes in the file: size and the zeros after it
	buf       []byte // appended, not yet written
	recovered [][]byte
	torn      int64 // bytes cut off at recovery
	err       error // the first write error: the log is unusable after it

	writing  chan struct{} // closed when the write SyncLater handed out ends
	writeErr *error        // and its outcome
}

// Open opens the log at path, creating it (and its directory) if absent,
// and recovers its records.
func Open(path string) (*Log, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s is in use by another process (%v)", path, err)
	}
	l := &Log{path: path, f: f}
	if err := l.recover(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func (l *Log) recover() error {
	fi, err := l.f.Stat()
	if err != nil {
		return err
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(l.f, data); err != nil {
		return err
	}
	head := data[:min(len(data), headerLen)]
	if string(head) != magic {
		// New, or torn while its header was written (its space may be
		// preallocated): start afresh.
		i := bytes.IndexByte(head, 0)
		if i < 0 {
			i = len(head)
		}
		if !bytes.HasPrefix([]byte(magic), head[:i]) || !allZero(data[i:]) {
			return fmt.Errorf("%s: not a Cohort log (header %q)", l.path, head)
		}
		return l.reset()
	}
	recs, good, err := Decode(data[headerLen:])
	if err != nil {
		return fmt.Errorf("%s: %w", l.path, err)
	}
	l.size = int64(headerLen + good)
	l.alloc = int64(len(data))
	l.recovered = detach(recs, good)
	if tail := data[l.size:]; !allZero(tail) {
		// A torn write: cut it off, and preallocate zeros in its place.
		l.torn = int64(len(tail) - countZeroSuffix(tail))
		if err := l.f.Truncate(l.size); err != nil {
			return err
		}
		l.alloc = spaceFor(l.size)
		if err := preallocate(l.f, l.size, l.alloc); err != nil {
			return err
		}
		if err := l.f.Sync(); err != nil {
			return err
		}
	}
	_, err = l.f.Seek(l.size, io.SeekStart)
	return err
}

// detach copies recs, which total n bytes, into a buffer of their own, so
// that they do not keep the whole file read at recovery, preallocated
// space included, in memory.
func detach(recs [][]byte, n int) [][]byte {
	buf := make([]byte, 0, n)
	for i, r := range recs {
		buf = append(buf, r...)
		recs[i] = buf[len(buf)-len(r) : len(buf) : len(buf)]
	}
	return recs
}

func countZeroSuffix(b []byte) int {
	n := 0
	for n < len(b) && b[len(b)-1-n] == 0 {
		n++
	}
	return n
}

// spaceFor is where a log's preallocated space ends once it holds n
// bytes: at the multiple of PreallocChunk after n.
func spaceFor(n int64) int64 { return (n/PreallocChunk + 1) * PreallocChunk }

// preallocate allocates f's bytes from..to, zeros, setting its size to
// to. On a file system without fallocate it does nothing: writes then
// extend the file, as appends do.
func preallocate(f *os.File, from, to int64) error {
	if to <= from {
		return nil
	}
	return diskio.Allocate(f, from, to-from)
}

// reset makes the file an empty log, durably.
func (l *Log) reset() error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	if _, err := l.f.WriteAt([]byte(magic), 0); err != nil {
		return err
	}
	l.alloc = spaceFor(int64(headerLen))
	if err := preallocate(l.f, int64(headerLen), l.alloc); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		return err
	}
	l.size = int64(headerLen)
	_, err := l.f.Seek(l.size, io.SeekStart)
	return err
}

// Decode reads the records of a log's body (what follows the header). It
// returns them, the length of the valid prefix, and an error if synced
// records are damaged; a torn tail is not an error, it is just not part
// of the prefix.
//
// A record cut short ends the log: the last write, torn. So does other
// damage that looks like a torn write (see torn) — a header of zeros, the
// start of unused space, among them. Anything else is corruption of
// synced data.
func Decode(body []byte) (recs [][]byte, good int, err error) {
	off := 0
	for off < len(body) {
		if len(body)-off < recHeader {
			break // torn record header
		}
		n := binary.LittleEndian.Uint32(body[off:])
		sum := binary.LittleEndian.Uint32(body[off+4:])
		if n > MaxRecord {
			if torn(body, off, off+recHeader) {
				break
			}
			return nil, 0, fmt.Errorf("%w: record at byte %d has length %d", ErrCorrupt, headerLen+off, n)
		}
		end := off + recHeader + int(n)
		if end > len(body) {
			break // cut short by a crash
		}
		data := body[off+recHeader : end]
		if crc(body[off:off+4], data) != sum {
			if torn(body, off, end) {
				break
			}
			return nil, 0, fmt.Errorf("%w: record at byte %d fails its checksum", ErrCorrupt, headerLen+off)
		}
		recs = append(recs, data)
		off = end
	}
	return recs, off, nil
}

// torn reports whether a damaged record, body[off:end], looks like the
// end of the log: unused space, or a write that a crash tore. A disk
// writes a 512-byte sector whole or not at all, and a sector it did not
// write holds what it held before — beyond the log's end, zeros (space
// preallocated, or a hole). So the record is torn when
//   - nothing but zeros follows it (the last write, partly written), or
//   - its first sector is zeros from it on (that sector was not written:
//     a header of zeros, where unused space begins, is the common case), or
//   - a sector that begins inside it is zeros (a later sector of the write
//     reached the disk, this one did not).
//
// No whole record has a header of zeros: the CRC of a zero length is not
// zero.
func torn(body []byte, off, end int) bool {
	if allZero(body[end:]) {
		return true
	}
	// Sector boundaries are in file offsets: the body starts at headerLen.
	next := (headerLen+off)/sector*sector + sector - headerLen
	if allZero(body[off:min(next, len(body))]) {
		return true
	}
	for s := next; s < end; s += sector {
		if allZero(body[s:min(s+sector, len(body))]) {
			return true
		}
	}
	// The record header itself may be what tore (the length then reads
	// as anything): accept it as torn when the rest cannot hold a record.
	return len(body)-off < 2*recHeader
}

var zeros [4096]byte

func allZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeros))
		if !bytes.Equal(b[:n], zeros[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}

func crc(length, data []byte) uint32 {
	return crc32.Update(crc32.Checksum(length, castagnoli), castagnoli, data)
}

// AppendRecord appends rec, framed as a record of a log's body (length,
// checksum, data), to b: what Decode reads back. Other logs that keep
// their own files (the message queues' segments) frame their records
// with it.
func AppendRecord(b, rec []byte) []byte { return appendRecord(b, rec) }

// appendRecord appends rec, framed, to b.
func appendRecord(b, rec []byte) []byte {
	var h [recHeader]byte
	binary.LittleEndian.PutUint32(h[:], uint32(len(rec)))
	binary.LittleEndian.PutUint32(h[4:], crc(h[:4], rec))
	return append(append(b, h[:]...), rec...)
}

// Recovered returns the records the log held when it was opened.
func (l *Log) Recovered() [][]byte { return l.recovered }

// Torn returns how many bytes of a torn tail Open cut off.
func (l *Log) Torn() int64 { return l.torn }

// Size is the log's length in bytes, unsynced appends included.
func (l *Log) Size() int64 { return l.size + int64(len(l.buf)) }

// Append adds rec to the log; it is durable once Sync returns.
func (l *Log) Append(rec []byte) error {
	if l.err != nil {
		return l.err
	}
	if len(rec) > MaxRecord {
		return fmt.Errorf("a record of %d bytes: the most is %d", len(rec), MaxRecord)
	}
	l.buf = appendRecord(l.buf, rec)
	return nil
}

// SyncLater takes what was appended so far out of the log's buffer and
// returns the write and sync of it, for the caller to run in a goroutine
// of its own while appends go on (group commit). The returned function
// must be called once; Sync, Replace, Close and the next SyncLater wait
// for it to end, and its failure fails the log as Sync's would.
func (l *Log) SyncLater() (write func() error) {
	l.settle()
	if l.err != nil {
		err := l.err
		return func() error { return err }
	}
	b, f := l.buf, l.f
	l.buf = nil
	l.size += int64(len(b))
	from, to := l.alloc, l.alloc
	if l.size > l.alloc {
		to = spaceFor(l.size)
		l.alloc = to
	}
	done, errp := make(chan struct{}), new(error)
	l.writing, l.writeErr = done, errp
	return func() error {
		defer close(done)
		if len(b) == 0 {
			return nil
		}
		if err := preallocate(f, from, to); err != nil {
			*errp = err
		} else if _, err := f.Write(b); err != nil {
			*errp = err
		} else if err := diskio.Fdatasync(f); err != nil {
			*errp = err
		}
		return *errp
	}
}

// settle waits for the write SyncLater handed out, if any, and takes its
// outcome.
func (l *Log) settle() {
	if l.writing == nil {
		return
	}
	<-l.writing
	if err := *l.writeErr; err != nil && l.err == nil {
		l.fail(err)
	}
	l.writing, l.writeErr = nil, nil
}

// Sync writes what was appended and makes it durable. After a failed
// write or sync the log refuses everything: what reached the disk is no
// longer known (a failed fsync may have dropped the pages it was to write).
func (l *Log) Sync() error {
	l.settle()
	if l.err != nil {
		return l.err
	}
	if len(l.buf) == 0 {
		return nil
	}
	if need := l.size + int64(len(l.buf)); need > l.alloc {
		if err := preallocate(l.f, l.alloc, spaceFor(need)); err != nil {
			return l.fail(err)
		}
		l.alloc = spaceFor(need)
	}
	if _, err := l.f.Write(l.buf); err != nil {
		return l.fail(err)
	}
	if err := diskio.Fdatasync(l.f); err != nil {
		return l.fail(err)
	}
	l.size += int64(len(l.buf))
	l.buf = l.buf[:0]
	if cap(l.buf) > 1<<20 {
		l.buf = nil
	}
	return nil
}

// Replace makes recs the whole log, durably and atomically.
func (l *Log) Replace(recs [][]byte) error {
	l.settle()
	if l.err != nil {
		return l.err
	}
	b := []byte(magic)
	for _, r := range recs {
		if len(r) > MaxRecord {
			return fmt.Errorf("a record of %d bytes: the most is %d", len(r), MaxRecord)
		}
		b = appendRecord(b, r)
	}
	tmp := l.path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return l.fail(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return l.fail(err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return l.fail(err)
	}
	alloc := spaceFor(int64(len(b)))
	if err := preallocate(f, int64(len(b)), alloc); err != nil {
		f.Close()
		return l.fail(err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return l.fail(err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		f.Close()
		return l.fail(err)
	}
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		f.Close()
		return l.fail(err)
	}
	l.f.Close() // and its lock: f, holding one, is the log now
	l.f, l.size, l.alloc, l.buf = f, int64(len(b)), alloc, l.buf[:0]
	return nil
}

func (l *Log) fail(err error) error {
	l.err = fmt.Errorf("%s: %w", l.path, err)
	return l.err
}

// Close closes the log. Appends not synced are lost, as at a crash.
func (l *Log) Close() error {
	l.settle()
	return l.f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
