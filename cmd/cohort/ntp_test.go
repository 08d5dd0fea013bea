package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live/livetest"
)

// cohort ntp serve --offset 250ms on a free loopback port, queried by
// cohort ntp query: the query measures the offset, within the delay, in
// both output forms; the server reports what it served when it stops.
func TestNTPServeAndQuery(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out livetest.Buffer
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		o := ntpServeOptions{listen: "127.0.0.1:0", stratum: 7, refid: "LOCL", offset: 250 * time.Millisecond}
		done <- runNTPServe(ctx, o, &out, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not start within 5s")
	}

	code, stdout, stderr := cli(t, "ntp", "query", addr, "--samples", "3", "--json")
	if code != 0 {
		t.Fatalf("query: exit %d: %s", code, stderr)
	}
	var r struct {
		Server   string `json:"server"`
		Stratum  int    `json:"stratum"`
		RefID    string `json:"refid"`
		OffsetNS int64  `json:"offset_ns"`
		DelayNS  int64  `json:"delay_ns"`
		OneWayNS int64  `json:"one_way_ns"`
		Best     int    `json:"best"`
		Samples  []struct {
			OffsetNS int64     `json:"offset_ns"`
			DelayNS  int64     `json:"delay_ns"`
			T1       time.Time `json:"t1"`
			T2       time.Time `json:"t2"`
		} `json:"samples"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	off, delay := time.Duration(r.OffsetNS), time.Duration(r.DelayNS)
	t.Logf("cohort ntp query %s: offset %v, delay %v", addr, off, delay)
	if (off - 250*time.Millisecond).Abs() > delay+time.Millisecond {
		t.Errorf("offset %v, want 250ms ± δ (%v) + 1ms", off, delay)
	}
	if d := r.DelayNS - 2*r.OneWayNS; d < 0 || d > 1 {
		t.Errorf("delay %d ns, one way %d ns: want δ = the round trip, twice the one-way estimate", r.DelayNS, r.OneWayNS)
	}
	if r.Server != addr || r.Stratum != 7 || r.RefID != "76.79.67.76 (LOCL)" || len(r.Samples) != 3 {
		t.Errorf("server %q stratum %d refid %q, %d samples; want %s, 7, LOCL, 3", r.Server, r.Stratum, r.RefID, len(r.Samples), addr)
	}
	if len(r.Samples) == 3 {
		b := r.Samples[r.Best]
		if b.OffsetNS != r.OffsetNS || b.DelayNS != r.DelayNS {
			t.Errorf("the result is not its best sample: %+v", r)
		}
		if ahead := b.T2.Sub(b.T1); ahead < 240*time.Millisecond {
			t.Errorf("T2 − T1 = %v, want the server's 250ms lead in it", ahead)
		}
	}

	code, stdout, stderr = cli(t, "ntp", "query", addr, "--samples", "2")
	if code != 0 {
		t.Fatalf("query: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"stratum 7", "OFFSET θ", "DELAY δ", "least delay", "offset +2", "from 2 sample(s)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not stop within 5s of its context ending")
	}
	for _, want := range []string{"serving on " + addr + " (stratum 7, refid LOCL, clock shifted by 250ms)", "served 5, ignored 0 malformed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("server output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestNTPBadInputNamesTheValue(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ntp", "serve", "--stratum", "16"}, 2, "--stratum 16: want 1 to 15"},
		{[]string{"ntp", "serve", "--stratum", "0"}, 2, "--stratum 0"},
		{[]string{"ntp", "serve", "--refid", "LOCAL"}, 2, `--refid: reference id "LOCAL"`},
		{[]string{"ntp", "serve", "--listen", "127.0.0.1:99999"}, 2, `--listen "127.0.0.1:99999"`},
		{[]string{"ntp", "serve", "--offset", "soon"}, 2, `"soon"`},
		{[]string{"ntp", "query"}, 2, "accepts 1 arg(s)"},
		{[]string{"ntp", "query", "127.0.0.1:1123", "--samples", "0"}, 2, "--samples 0"},
		{[]string{"ntp", "query", "127.0.0.1:1123", "--timeout", "0s"}, 2, "--timeout 0s"},
	}
	for _, c := range cases {
		code, _, stderr := cli(t, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d naming %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

// A query nobody answers fails with exit status 1 and says so.
func TestNTPQueryWithoutAServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runNTPServe(ctx, ntpServeOptions{listen: "127.0.0.1:0", stratum: 10, refid: "LOCL"}, &livetest.Buffer{}, func(a string) { addrc <- a })
	}()
	addr := <-addrc
	cancel() // the port is closed again: nobody listens there
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	code, _, stderr := cli(t, "ntp", "query", addr, "--samples", "1", "--timeout", "300ms")
	if code != 1 || !strings.Contains(stderr, addr) {
		t.Errorf("exit %d, %q; want exit 1 naming %s", code, stderr, addr)
	}
}
