package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchRPC(t *testing.T) {
	code, out, errs := cli(t, "bench", "rpc", "--semantics", "at-most-once,maybe", "--calls", "50", "--runs", "1", "--pool", "2", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r struct {
		Rows []struct {
			Semantics string  `json:"semantics"`
			Calls     int     `json:"calls"`
			PerSec    float64 `json:"calls_per_sec"`
			P50       float64 `json:"p50_us"`
			Pool      struct {
				Size int `json:"size"`
			} `json:"pool"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Rows) != 2 || r.Rows[0].Semantics != "at-most-once" || r.Rows[1].Calls != 50 || r.Rows[0].PerSec <= 0 || r.Rows[0].Pool.Size != 2 {
		t.Fatalf("rows %+v", r.Rows)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--callers", "0"}, "--callers 0"},
		{[]string{"--callers", "5000"}, "--callers 5000"},
		{[]string{"--calls", "2000000000"}, "--calls 2000000000"},
		{[]string{"--payload", "0"}, "--payload 0"},
		{[]string{"--payload", "100000000"}, "--payload 100000000"},
		{[]string{"--runs", "99"}, "--runs 99"},
		{[]string{"--pool", "-1"}, `--pool "-1"`},
		{[]string{"--semantics", "exactly-once"}, `"exactly-once"`},
	} {
		code, _, errs := cli(t, append([]string{"bench", "rpc"}, bad.args...)...)
		if code != 2 || !strings.Contains(errs, bad.want) {
			t.Errorf("bench rpc %s: exit %d, %q; want exit 2 and %q", strings.Join(bad.args, " "), code, errs, bad.want)
		}
	}
}
