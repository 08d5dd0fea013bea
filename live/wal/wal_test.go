package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func open(t *testing.T, path string) *Log {
	t.Helper()
	l, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func recsOf(ss ...string) [][]byte {
	var r [][]byte
	for _, s := range ss {
		r = append(r, []byte(s))
	}
	return r
}

func equal(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

func mustAppend(t *testing.T, l *Log, recs ...[]byte) {
	t.Helper()
	for _, r := range recs {
		if err := l.Append(r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecoverWhatWasSynced: a reopened log holds exactly the synced
// records; appends not synced before Close (a crash) are gone.
func TestRecoverWhatWasSynced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d", "x.log")
	l := open(t, path)
	if len(l.Recovered()) != 0 {
		t.Fatalf("a new log recovered %q", l.Recovered())
	}
	mustAppend(t, l, recsOf("term=1", "", "vote=p2")...)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, []byte("never synced"))
	l.Close()

	l = open(t, path)
	defer l.Close()
	if want := recsOf("term=1", "", "vote=p2"); !equal(l.Recovered(), want) {
		t.Fatalf("recovered %q, want %q", l.Recovered(), want)
	}
	mustAppend(t, l, []byte("term=2"))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l = open(t, path)
	defer l.Close()
	if want := recsOf("term=1", "", "vote=p2", "term=2"); !equal(l.Recovered(), want) {
		t.Fatalf("recovered %q, want %q", l.Recovered(), want)
	}
}

// TestTornTailCutAtEveryByte: whatever prefix of the last write reached
// the disk, Open recovers the records synced before it and cuts the rest
// off, so that the next appends follow valid records.
func TestTornTailCutAtEveryByte(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.log")
	l := open(t, path)
	mustAppend(t, l, recsOf("a", "bb")...)
	l.Sync()
	synced := l.Size()
	mustAppend(t, l, recsOf("ccc", "dddd")...)
	l.Sync()
	file, _ := os.ReadFile(path)
	full := file[:l.Size()]
	l.Close()
	// A file that was appended to (a log written before preallocation, or
	// on a file system without it) ends where the write stopped; a
	// preallocated one has its zeros after it.
	for _, prealloc := range []bool{false, true} {
		for cut := synced; cut < int64(len(full)); cut++ {
			tornTailCutAt(t, path, full, cut, prealloc)
		}
	}
}

func tornTailCutAt(t *testing.T, path string, full []byte, cut int64, prealloc bool) {
	t.Helper()
	{
		crashed := full[:cut]
		if prealloc {
			crashed = append(slices.Clone(crashed), make([]byte, PreallocChunk-cut)...)
		}
		os.WriteFile(path, crashed, 0o600)
		l := open(t, path)
		got := l.Recovered()
		if !equal(got[:min(2, len(got))], recsOf("a", "bb")) || len(got) > 3 {
			t.Fatalf("cut at %d (preallocated %v): recovered %q", cut, prealloc, got)
		}
		mustAppend(t, l, []byte("e"))
		l.Sync()
		l.Close()
		l = open(t, path)
		if want := append(slices.Clone(got), []byte("e")); !equal(l.Recovered(), want) {
			t.Fatalf("cut at %d (preallocated %v), then an append: recovered %q, want %q", cut, prealloc, l.Recovered(), want)
		}
		l.Close()
	}
}

// TestZeroedTail: a tail of zeros (blocks allocated, never written) is
// unused space, not a torn write: nothing is cut off.
func TestZeroedTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	os.WriteFile(path, append([]byte(magic), encode(recsOf("a", "b"))...), 0o600)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(make([]byte, 4096))
	f.Close()
	l := open(t, path)
	defer l.Close()
	if !equal(l.Recovered(), recsOf("a", "b")) || l.Torn() != 0 {
		t.Fatalf("recovered %q, torn %d", l.Recovered(), l.Torn())
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(headerLen+2*(recHeader+1)+4096) {
		t.Fatalf("the file is now %d bytes", fi.Size())
	}
}

// TestTornSectorInsideTheLastWrite: one write of several records, of which
// a middle sector never reached the disk while the next did. The records
// from the hole on are dropped; the earlier ones stay.
func TestTornSectorInsideTheLastWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l := open(t, path)
	mustAppend(t, l, []byte("synced"))
	l.Sync()
	big := bytes.Repeat([]byte{'x'}, 2000)
	mustAppend(t, l, big, big, []byte("after"))
	l.Sync()
	l.Close()
	data, _ := os.ReadFile(path)
	clear(data[1024:1536]) // a sector inside the first big record
	os.WriteFile(path, data, 0o600)
	l = open(t, path)
	defer l.Close()
	if !equal(l.Recovered(), recsOf("synced")) {
		t.Fatalf("recovered %d records", len(l.Recovered()))
	}
}

// TestCorruptionIsRefused: a flipped bit in a record with valid records
// after it is damage to synced data; Open refuses the log.
func TestCorruptionIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l := open(t, path)
	mustAppend(t, l, recsOf("first", "second", "third")...)
	l.Sync()
	l.Close()
	data, _ := os.ReadFile(path)
	data[headerLen+recHeader+1] ^= 0x10 // in "first"
	os.WriteFile(path, data, 0o600)
	if _, err := Open(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a corrupt log: %v", err)
	}
	// A damaged length in the middle, too.
	data[headerLen+recHeader+1] ^= 0x10
	data[headerLen] = 0x09 // "first" becomes 9 bytes long
	os.WriteFile(path, data, 0o600)
	if _, err := Open(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a log with a damaged length: %v", err)
	}
}

func TestNotALog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	os.WriteFile(path, []byte("id: 0\nlisten: x\n"), 0o600)
	_, err := Open(path)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("not a Cohort log")) {
		t.Fatalf("Open of a YAML file: %v", err)
	}
}

// TestReplace: compaction swaps the log whole; unsynced appends before it
// are superseded; appends after it follow the new records.
func TestReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l := open(t, path)
	mustAppend(t, l, recsOf("1", "2", "3")...)
	l.Sync()
	mustAppend(t, l, []byte("4"))
	if err := l.Replace(recsOf("snapshot@4")); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, []byte("5"))
	l.Sync()
	l.Close()
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left: %v", err)
	}
	l = open(t, path)
	defer l.Close()
	if want := recsOf("snapshot@4", "5"); !equal(l.Recovered(), want) {
		t.Fatalf("recovered %q, want %q", l.Recovered(), want)
	}
}

// TestOneOpener: a node started twice on one data directory must not
// write one log from two processes.
func TestOneOpener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l := open(t, path)
	_, err := Open(path)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("in use")) {
		t.Fatalf("second Open: %v", err)
	}
	if err := l.Replace(recsOf("r")); err != nil { // the lock moves with the file
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Fatal("second Open after Replace succeeded")
	}
	l.Close()
	l = open(t, path)
	l.Close()
}

func TestOversizedRecord(t *testing.T) {
	l := open(t, filepath.Join(t.TempDir(), "x.log"))
	defer l.Close()
	err := l.Append(make([]byte, MaxRecord+1))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprint(MaxRecord+1))) {
		t.Fatalf("Append of an oversized record: %v", err)
	}
}

func encode(recs [][]byte) []byte {
	var b []byte
	for _, r := range recs {
		b = appendRecord(b, r)
	}
	return b
}

// TestDecodeProperties: the encoding of any records decodes to them, and
// any cut of it decodes, without error, to a prefix of them.
func TestDecodeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := rapid.SliceOfN(rapid.SliceOfN(rapid.Byte(), 0, 1200), 0, 8).Draw(t, "recs")
		body := encode(recs)
		got, good, err := Decode(body)
		if err != nil || good != len(body) || !equal(got, recs) {
			t.Fatalf("Decode(encode) = %d records, %d/%d bytes, %v", len(got), good, len(body), err)
		}
		cut := rapid.IntRange(0, len(body)).Draw(t, "cut")
		got, good, err = Decode(body[:cut])
		if err != nil || good > cut || len(got) > len(recs) || !equal(got, recs[:len(got)]) {
			t.Fatalf("cut at %d: %d records, %d bytes, %v", cut, len(got), good, err)
		}
	})
}

// FuzzDecode: no input panics Decode or makes it allocate beyond the
// input, and what it accepts re-encodes to the valid prefix.
func FuzzDecode(f *testing.F) {
	f.Add(encode(recsOf("a", "bb", "")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0})
	f.Add(make([]byte, 700))
	f.Add(append(encode(recsOf("a")), make([]byte, 1000)...))               // preallocated space
	f.Add(append(append(encode(recsOf("a")), make([]byte, 600)...), 'x'))   // a later sector landed
	f.Add(append(append(encode(recsOf("a")), make([]byte, 8)...), "bc"...)) // a zeroed header
	f.Fuzz(func(t *testing.T, body []byte) {
		recs, good, err := Decode(body)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if good > len(body) || !bytes.Equal(encode(recs), body[:good]) {
			t.Fatalf("valid prefix %d of %d does not re-encode", good, len(body))
		}
	})
}

// SyncLater: the write it hands out covers what was appended before it;
// appends go on meanwhile, and a later Sync (which waits for the write)
// covers them; a failed write fails the log.
func TestSyncLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l := open(t, path)
	mustAppend(t, l, recsOf("a", "b")...)
	write := l.SyncLater()
	done := make(chan error, 1)
	go func() { done <- write() }()
	mustAppend(t, l, []byte("c"))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, []byte("d"))
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, []byte("e"))
	write = l.SyncLater()
	l.f.Close() // the write fails
	if err := write(); err == nil {
		t.Fatal("a write to a closed file succeeded")
	}
	if err := l.Sync(); err == nil {
		t.Fatal("a log whose background write failed synced")
	}
	l = open(t, path)
	defer l.Close()
	if want := recsOf("a", "b", "c", "d"); !equal(l.Recovered(), want) {
		t.Fatalf("recovered %q, want %q", l.Recovered(), want)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestPreallocated: a log's file is preallocated when it is created and
// when a write reaches the end of its space (by Sync, SyncLater or
// Replace), so that a sync changes no size; a reopened log reads the zeros
// after its records as unused space.
func TestPreallocated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l := open(t, path)
	if got := fileSize(t, path); got != PreallocChunk {
		t.Fatalf("a new log's file has %d bytes, want %d", got, PreallocChunk)
	}
	mustAppend(t, l, recsOf("a", "bb")...)
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got != PreallocChunk {
		t.Fatalf("after a sync the file has %d bytes, want %d", got, PreallocChunk)
	}
	l.Close()

	l = open(t, path)
	if !equal(l.Recovered(), recsOf("a", "bb")) || l.Torn() != 0 || fileSize(t, path) != PreallocChunk {
		t.Fatalf("reopened: recovered %q, torn %d, file %d bytes", l.Recovered(), l.Torn(), fileSize(t, path))
	}
	// Past the end of the space, by Sync and by SyncLater.
	big := bytes.Repeat([]byte{'x'}, PreallocChunk/3)
	want := recsOf("a", "bb")
	for i := range 4 {
		mustAppend(t, l, big)
		want = append(want, big)
		if i%2 == 0 {
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		} else if err := l.SyncLater()(); err != nil {
			t.Fatal(err)
		}
		if got := fileSize(t, path); got < l.Size() || got%PreallocChunk != 0 {
			t.Fatalf("a log of %d bytes in a file of %d", l.Size(), got)
		}
	}
	l.Close()
	l = open(t, path)
	if !equal(l.Recovered(), want) || l.Torn() != 0 {
		t.Fatalf("reopened: %d records, torn %d", len(l.Recovered()), l.Torn())
	}
	if err := l.Replace(recsOf("snapshot")); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(t, path); got != PreallocChunk {
		t.Fatalf("after Replace the file has %d bytes, want %d", got, PreallocChunk)
	}
	mustAppend(t, l, []byte("next"))
	l.Sync()
	l.Close()
	l = open(t, path)
	defer l.Close()
	if want := recsOf("snapshot", "next"); !equal(l.Recovered(), want) {
		t.Fatalf("recovered %q, want %q", l.Recovered(), want)
	}
}

// TestCreationTorn: a crash while a log was created may leave its space
// allocated and its header, or part of it, unwritten; the log is new.
func TestCreationTorn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	for _, head := range []string{"", "coh", magic[:headerLen-1]} {
		os.WriteFile(path, append([]byte(head), make([]byte, 8192)...), 0o600)
		l := open(t, path)
		if len(l.Recovered()) != 0 {
			t.Fatalf("header %q: recovered %q", head, l.Recovered())
		}
		mustAppend(t, l, []byte("r"))
		l.Sync()
		l.Close()
		l = open(t, path)
		if !equal(l.Recovered(), recsOf("r")) {
			t.Fatalf("header %q, then an append: recovered %q", head, l.Recovered())
		}
		l.Close()
	}
	os.WriteFile(path, append([]byte("cohortX\x00"), make([]byte, 8192)...), 0o600)
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "not a Cohort log") {
		t.Fatalf("Open of a file with a foreign header: %v", err)
	}
}

// TestLaterSectorOfTornWriteLanded: the last write's first sector never
// reached the disk while a later one did. The log ends where that write
// began; what landed of it is zeroed again, so that a shorter write after
// recovery cannot put a boundary where one of its records begins and bring
// back records that were never synced.
func TestLaterSectorOfTornWriteLanded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l := open(t, path)
	mustAppend(t, l, []byte("synced"))
	l.Sync()
	synced := l.Size()
	first := bytes.Repeat([]byte{'1'}, 1000)
	mustAppend(t, l, first, []byte("never synced"), []byte("nor this"))
	l.Sync()
	l.Close()
	data, _ := os.ReadFile(path)
	clear(data[synced : (synced/sector+1)*sector]) // the first sector of the write is lost
	os.WriteFile(path, data, 0o600)

	l = open(t, path)
	if !equal(l.Recovered(), recsOf("synced")) || l.Torn() == 0 {
		t.Fatalf("recovered %q, torn %d", l.Recovered(), l.Torn())
	}
	again := bytes.Repeat([]byte{'2'}, len(first)) // as long as the lost record
	mustAppend(t, l, again)
	l.Sync()
	l.Close()
	l = open(t, path)
	defer l.Close()
	if want := [][]byte{[]byte("synced"), again}; !equal(l.Recovered(), want) {
		t.Fatalf("recovered %q, want %q", l.Recovered(), want)
	}
}

// TestZeroHeaderWithDataAfterItInItsSector: a header of zeros is the end
// of the log only if its sector is zero after it, as a sector never
// written is; otherwise it is damage to synced records. No record has a
// header of zeros.
func TestZeroHeaderWithDataAfterItInItsSector(t *testing.T) {
	if h := appendRecord(nil, nil); allZero(h) {
		t.Fatalf("an empty record's header is %x", h)
	}
	path := filepath.Join(t.TempDir(), "x.log")
	l := open(t, path)
	mustAppend(t, l, recsOf("first", "second", "third")...)
	l.Sync()
	l.Close()
	data, _ := os.ReadFile(path)
	second := headerLen + recHeader + len("first")
	clear(data[second : second+recHeader])
	os.WriteFile(path, data, 0o600)
	if _, err := Open(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a log with a zeroed header before records: %v", err)
	}
}

// TestDecodeCrashedWrites: the disk model of a crash in a preallocated
// file. Synced records, then a write of more that was never synced, of
// which any set of 512-byte sectors did not reach the disk (they hold what
// they held before: the synced bytes, then zeros). Decode returns the
// synced records and a prefix of the unsynced ones, never an error.
func TestDecodeCrashedWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Records of up to three sectors, so that writes span several.
		rec := rapid.Custom(func(t *rapid.T) []byte {
			r := bytes.Repeat([]byte{rapid.Byte().Draw(t, "fill")}, rapid.IntRange(0, 3*sector).Draw(t, "len"))
			if len(r) > 0 {
				r[0] = rapid.Byte().Draw(t, "first")
			}
			return r
		})
		gen := rapid.SliceOfN(rec, 0, 6)
		synced, unsynced := gen.Draw(t, "synced"), gen.Draw(t, "unsynced")
		file := append([]byte(magic), encode(synced)...)
		durable := len(file)
		file = append(file, encode(unsynced)...)
		file = append(file, make([]byte, rapid.IntRange(0, 2048).Draw(t, "zeros"))...)
		for s := durable / sector * sector; s < len(file); s += sector {
			if rapid.Bool().Draw(t, fmt.Sprintf("lost %d", s)) {
				clear(file[max(s, durable):min(s+sector, len(file))])
			}
		}
		got, _, err := Decode(file[headerLen:])
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < len(synced) || !equal(got[:len(synced)], synced) {
			t.Fatalf("recovered %d records, not the %d synced", len(got), len(synced))
		}
		if rest := got[len(synced):]; len(rest) > len(unsynced) || !equal(rest, unsynced[:len(rest)]) {
			t.Fatalf("recovered %d unsynced records, not a prefix of the %d", len(rest), len(unsynced))
		}
	})
}

// BenchmarkSync: one 200-byte record appended and synced per operation,
// as a replicated lock's handoff commits one entry; p50-us is the median.
func BenchmarkSync(b *testing.B) {
	l, err := Open(filepath.Join(b.TempDir(), "x.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rec := make([]byte, 200)
	ds := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if err := l.Append(rec); err != nil {
			b.Fatal(err)
		}
		if err := l.Sync(); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2])/1e3, "p50-us")
}

// TestPowerCut: a log synced, then a write of more records, then the power
// cut: of that last write any set of 512-byte sectors reached the disk.
// The reopened log holds every synced record and a prefix of the rest;
// records synced after recovery follow exactly those, with nothing of the
// lost write brought back.
func TestPowerCut(t *testing.T) {
	dir := t.TempDir()
	rec := rapid.Custom(func(t *rapid.T) []byte {
		r := bytes.Repeat([]byte{rapid.Byte().Draw(t, "fill")}, rapid.IntRange(0, 3*sector).Draw(t, "len"))
		if len(r) > 0 {
			r[len(r)-1] = rapid.Byte().Draw(t, "last")
		}
		return r
	})
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		path := filepath.Join(dir, fmt.Sprintf("%d.log", run))
		l := open(t, path)
		var synced [][]byte
		for range rapid.IntRange(0, 2).Draw(rt, "syncs") {
			recs := rapid.SliceOfN(rec, 1, 4).Draw(rt, "synced")
			mustAppend(t, l, recs...)
			if err := l.Sync(); err != nil {
				t.Fatal(err)
			}
			synced = append(synced, recs...)
		}
		from := l.Size()
		unsynced := rapid.SliceOfN(rec, 1, 6).Draw(rt, "unsynced")
		mustAppend(t, l, unsynced...)
		l.Sync()
		to := l.Size()
		l.Close()
		// The file as the power cut left it: of the bytes from..to, the
		// sectors that landed; the rest still zeros.
		f, _ := os.OpenFile(path, os.O_RDWR, 0)
		written := make([]byte, to-from)
		f.ReadAt(written, from)
		crashed := make([]byte, len(written))
		for s := from / sector * sector; s < to; s += sector {
			if rapid.Bool().Draw(rt, fmt.Sprintf("landed %d", s)) {
				lo, hi := max(s, from)-from, min(s+sector, to)-from
				copy(crashed[lo:hi], written[lo:hi])
			}
		}
		f.WriteAt(crashed, from)
		f.Close()

		l = open(t, path)
		got := slices.Clone(l.Recovered())
		if len(got) < len(synced) || !equal(got[:len(synced)], synced) {
			rt.Fatalf("recovered %d records, not the %d synced", len(got), len(synced))
		}
		if rest := got[len(synced):]; len(rest) > len(unsynced) || !equal(rest, unsynced[:len(rest)]) {
			rt.Fatalf("recovered %d unsynced records, not a prefix of the %d", len(rest), len(unsynced))
		}
		after := rapid.SliceOfN(rec, 1, 3).Draw(rt, "after")
		mustAppend(t, l, after...)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		l.Close()
		l = open(t, path)
		defer l.Close()
		if want := append(got, after...); !equal(l.Recovered(), want) {
			rt.Fatalf("after recovery and an append: %d records, want %d", len(l.Recovered()), len(want))
		}
		os.Remove(path)
	})
}
