// Package wal is stable storage on a file: an append-only log of
// checksummed records, the live host's implementation of proc.Storage.
//
// The file is a magic header followed by records, each
//
//	length  uint32, little-endian (of data)
//	crc     uint32, little-endian: CRC-32C of length and data
//	data    length bytes
//
// Appends are buffered in memory; Sync writes them with one write and
// makes them durable with fdatasync. Replace (compaction) writes the new
// log to a temporary file, syncs it, renames it over the old one and syncs
// the directory, so that a crash leaves one log or the other, whole.
//
// Open recovers a log after a crash. A torn tail — a record cut short, or
// one whose checksum fails and which nothing valid follows — is what a
// crash during an unsynced write leaves; it is cut off (those writes were
// never synced, so nothing acknowledged is lost). A record that fails its
// checksum with data after it is corruption of synced data: Open refuses
// the log rather than start a process on state it no longer has.
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
)

// MaxRecord is the largest record a log holds, in bytes. A length above
// it at recovery is damage, not a record to allocate memory for.
const MaxRecord = 64 << 20

const (
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
	size      int64  // bytes in the file
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
	data, err := io.ReadAll(l.f)
	if err != nil {
		return err
	}
	if len(data) < headerLen {
		// New, or torn while its header was written: start afresh.
		if !bytes.Equal(data, []byte(magic)[:len(data)]) {
			return fmt.Errorf("%s: not a Cohort log (header %q)", l.path, data)
		}
		return l.reset()
	}
	if string(data[:headerLen]) != magic {
		return fmt.Errorf("%s: not a Cohort log (header %q)", l.path, data[:headerLen])
	}
	recs, good, err := Decode(data[headerLen:])
	if err != nil {
		return fmt.Errorf("%s: %w", l.path, err)
	}
	l.recovered = recs
	l.size = int64(headerLen + good)
	if l.torn = int64(len(data)) - l.size; l.torn > 0 {
		if err := l.f.Truncate(l.size); err != nil {
			return err
		}
		if err := l.f.Sync(); err != nil {
			return err
		}
	}
	_, err = l.f.Seek(l.size, io.SeekStart)
	return err
}

// reset makes the file an empty log, durably.
func (l *Log) reset() error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	if _, err := l.f.WriteAt([]byte(magic), 0); err != nil {
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
// A record cut short ends the log: the last write, torn. Other damage is
// a torn write, and ends the log too, when nothing follows it, when
// everything after it is zeros, or when it covers a zeroed 512-byte sector
// (a page of the last write that never reached the disk while a later one
// did). Anything else is corruption of synced data.
func Decode(body []byte) (recs [][]byte, good int, err error) {
	off := 0
	for off < len(body) {
		if len(body)-off < recHeader {
			break // torn record header
		}
		n := binary.LittleEndian.Uint32(body[off:])
		sum := binary.LittleEndian.Uint32(body[off+4:])
		end := off + recHeader + int(n)
		if n > MaxRecord {
			if torn(body, off, len(body)) {
				break
			}
			return nil, 0, fmt.Errorf("%w: record at byte %d has length %d", ErrCorrupt, headerLen+off, n)
		}
		if end > len(body) {
			break // cut short by a crash
		}
		data := body[off+recHeader : end]
		if crc(body[off:off+4], data) != sum {
			if end == len(body) || torn(body, off, end) {
				break
			}
			return nil, 0, fmt.Errorf("%w: record at byte %d fails its checksum", ErrCorrupt, headerLen+off)
		}
		recs = append(recs, data)
		off = end
	}
	return recs, off, nil
}

// torn reports whether damage in body[off:end] looks like a torn write:
// the rest of the body is zeros, or a 512-byte sector of the file inside
// body[off:end] is.
func torn(body []byte, off, end int) bool {
	if allZero(body[off:]) {
		return true
	}
	const sector = 512
	// Sector boundaries are in file offsets: the body starts at headerLen.
	for s := (headerLen+off+sector-1)/sector*sector - headerLen; s+sector <= end; s += sector {
		if allZero(body[s : s+sector]) {
			return true
		}
	}
	// The record header itself may be what tore (the length then reads
	// as anything): accept it as torn when the rest cannot hold a record.
	return len(body)-off < 2*recHeader
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
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
	done, errp := make(chan struct{}), new(error)
	l.writing, l.writeErr = done, errp
	return func() error {
		defer close(done)
		if len(b) == 0 {
			return nil
		}
		if _, err := f.Write(b); err != nil {
			*errp = err
		} else if err := fdatasync(f); err != nil {
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
	if _, err := l.f.Write(l.buf); err != nil {
		return l.fail(err)
	}
	if err := fdatasync(l.f); err != nil {
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
	l.f, l.size, l.buf = f, int64(len(b)), l.buf[:0]
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

func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
