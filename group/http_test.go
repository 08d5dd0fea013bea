package group

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestHTTPMulticastAndDeliveries(t *testing.T) {
	a := algo(t, "total-isis")
	ns := inprocCluster(t, 3, a)
	var urls []string
	for _, n := range ns {
		h := httptest.NewServer(NewServer(ServerConfig{Node: n, Algorithm: a}).Handler())
		t.Cleanup(h.Close)
		urls = append(urls, h.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ds0, wait0, err := (&Client{Endpoints: urls[:1]}).Deliveries(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	ds2, _, err := (&Client{Endpoints: urls[2:]}).Deliveries(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	bodies := [][]byte{[]byte("one"), {0, 1, 2, 255}, []byte(strings.Repeat("x", 70000))}
	for i, b := range bodies {
		c := &Client{Endpoints: []string{"127.0.0.1:1", urls[i%3]}}
		if id, err := c.Multicast(ctx, "g", b); err != nil || id.Origin != 0 && id.Origin != 1 && id.Origin != 2 {
			t.Fatalf("multicast %d: %+v %v", i, id, err)
		}
	}
	var got0, got2 []Delivery
	for range bodies {
		got0 = append(got0, <-ds0)
		got2 = append(got2, <-ds2)
	}
	for i := range got0 {
		if got0[i].ID != got2[i].ID || !bytes.Equal(got0[i].Body, got2[i].Body) {
			t.Fatalf("delivery %d differs between nodes: %+v vs %+v", i, got0[i].ID, got2[i].ID)
		}
	}
	for _, b := range bodies {
		found := false
		for _, d := range got0 {
			found = found || bytes.Equal(d.Body, b)
		}
		if !found {
			t.Fatalf("body of %d bytes not delivered intact", len(b))
		}
	}
	cancel()
	if err := wait0(); err != nil {
		t.Fatalf("stream ended with %v", err)
	}
}

func TestHTTPBadInput(t *testing.T) {
	a := algo(t, "total-sequencer")
	ns := inprocCluster(t, 1, a)
	h := httptest.NewServer(NewServer(ServerConfig{Node: ns[0], Algorithm: a}).Handler())
	defer h.Close()
	for _, c := range []struct {
		method, path string
		body         []byte
		code         int
		want         string
	}{
		{"POST", "/v1/groups/a%20b/messages", []byte("x"), 400, `group name "a b"`},
		{"POST", "/v1/groups/g/messages", make([]byte, MaxBody+1), 413, "limit"},
		{"GET", "/v1/groups/%2e%2e/deliveries", nil, 400, "group name"},
	} {
		req, _ := http.NewRequest(c.method, h.URL+c.path, bytes.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(e.Error, c.want) {
			t.Errorf("%s %s: %d %q, want %d naming %s", c.method, c.path, resp.StatusCode, e.Error, c.code, c.want)
		}
	}
}

func TestReadDeliveries(t *testing.T) {
	in := ": hi\ndata: {\"origin\":2,\"seq\":7,\"body\":\"aGk=\"}\n\nevent: error\ndata: \"too slow\"\n\n"
	var got []Delivery
	err := ReadDeliveries(strings.NewReader(in), func(d Delivery) bool { got = append(got, d); return true })
	if len(got) != 1 || got[0].Origin != 2 || got[0].Seq != 7 || string(got[0].Body) != "hi" {
		t.Fatalf("got %+v", got)
	}
	if err == nil || !strings.Contains(err.Error(), "too slow") {
		t.Fatalf("error event: %v", err)
	}
	if err := ReadDeliveries(strings.NewReader("data: [1,2]\n"), func(Delivery) bool { return true }); err == nil || !strings.Contains(err.Error(), "[1,2]") {
		t.Fatalf("bad delivery: %v", err)
	}
}

// ReadDeliveries never panics on garbage, and reads back what a node
// writes.
func FuzzReadDeliveries(f *testing.F) {
	f.Add([]byte("data: {\"origin\":1,\"seq\":1,\"body\":\"eA==\"}\n\n"))
	f.Add([]byte("event: error\ndata: x\n"))
	f.Add([]byte("data: {\"body\":\"!!\"}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = ReadDeliveries(bytes.NewReader(b), func(Delivery) bool { return true })
		d := Delivery{ID: ID{Origin: 3, Seq: uint64(len(b))}, Body: b}
		enc, _ := json.Marshal(d)
		var got []Delivery
		err := ReadDeliveries(strings.NewReader("data: "+string(enc)+"\n\n"), func(d Delivery) bool { got = append(got, d); return true })
		if err != nil || len(got) != 1 || !bytes.Equal(got[0].Body, b) || got[0].ID != d.ID {
			t.Fatalf("round trip of %q: %+v %v", b, got, err)
		}
	})
}

// A listener that stops reading its delivery stream is cut off once a
// write to it has blocked for the stall bound, rather than held for ever:
// a raw connection with a small receive buffer asks for the stream and
// never reads; messages of MaxBody bytes fill the buffers; the node ends the stream
// and the group no longer counts the listener.
func TestStalledListenerIsCutOff(t *testing.T) {
	a := algo(t, "total-sequencer")
	ns := inprocCluster(t, 3, a)
	srv := NewServer(ServerConfig{Node: ns[0], Algorithm: a, Stall: 100 * time.Millisecond})
	h := httptest.NewServer(srv.Handler())
	t.Cleanup(h.Close)
	g, err := srv.Group("g")
	if err != nil {
		t.Fatal(err)
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(h.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /v1/groups/g/deliveries HTTP/1.1\r\nHost: x\r\n\r\n")
	listeners := func() int { g.subMu.Lock(); defer g.subMu.Unlock(); return len(g.subs) }
	deadline := time.Now().Add(10 * time.Second)
	for listeners() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stream never started")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body := bytes.Repeat([]byte("x"), MaxBody)
	for sent := 0; listeners() > 0; sent++ {
		if sent == 64 || time.Now().After(deadline) {
			t.Fatalf("%d messages of %d bytes sent and the listener that reads nothing is still served", sent, MaxBody)
		}
		if _, err := g.Multicast(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
}
