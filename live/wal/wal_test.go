package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

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
	full, _ := os.ReadFile(path)
	l.Close()
	for cut := synced; cut < int64(len(full)); cut++ {
		os.WriteFile(path, full[:cut], 0o600)
		l := open(t, path)
		got := l.Recovered()
		if !equal(got[:min(2, len(got))], recsOf("a", "bb")) || len(got) > 3 {
			t.Fatalf("cut at %d: recovered %q", cut, got)
		}
		mustAppend(t, l, []byte("e"))
		l.Sync()
		l.Close()
		l = open(t, path)
		if want := append(slices.Clone(got), []byte("e")); !equal(l.Recovered(), want) {
			t.Fatalf("cut at %d, then an append: recovered %q, want %q", cut, l.Recovered(), want)
		}
		l.Close()
	}
}

// TestZeroedTail: a tail of zeros (blocks allocated, never written) is a
// torn write.
func TestZeroedTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	l := open(t, path)
	mustAppend(t, l, recsOf("a", "b")...)
	l.Sync()
	l.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(make([]byte, 4096))
	f.Close()
	l = open(t, path)
	defer l.Close()
	if !equal(l.Recovered(), recsOf("a", "b")) || l.Torn() != 4096 {
		t.Fatalf("recovered %q, torn %d", l.Recovered(), l.Torn())
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
