package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Two listeners on different nodes print the same messages in the same
// order (the cluster's groups run total-sequencer); sends come from the
// command line and from standard input through different nodes.
func TestMulticastCommand(t *testing.T) {
	endpoints := startCluster(t, "--nodes", "3", "--inproc")
	bin := cohortBinary(t)
	listen := func(ep string) (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command(bin, "multicast", "bank", "--listen", "--count", "6", "--json", "--timeout", "20s", "--endpoints", ep)
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	l0, out0 := listen(endpoints[0])
	l2, out2 := listen(endpoints[2])
	time.Sleep(300 * time.Millisecond) // the streams are open

	done := make(chan error, 2)
	go func() {
		for _, m := range []string{"deposit 100", "interest 1%", "withdraw 50"} {
			if out, err := exec.Command(bin, "multicast", "bank", "--send", m, "--endpoints", endpoints[1]).CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "sent p1#") {
				done <- &cliError{err, string(out)}
				return
			}
		}
		done <- nil
	}()
	go func() {
		cmd := exec.Command(bin, "multicast", "bank", "--send", "-", "--json", "--endpoints", endpoints[2])
		cmd.Stdin = strings.NewReader("a\nb\nc\n")
		out, err := cmd.CombinedOutput()
		if err == nil && strings.Count(string(out), `"origin":2`) != 3 {
			err = &cliError{nil, string(out)}
		}
		done <- err
	}()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := l0.Wait(); err != nil {
		t.Fatalf("listener on node 0: %v\n%s", err, out0)
	}
	if err := l2.Wait(); err != nil {
		t.Fatalf("listener on node 2: %v\n%s", err, out2)
	}
	if out0.String() != out2.String() {
		t.Fatalf("nodes 0 and 2 delivered differently:\n%s\n---\n%s", out0, out2)
	}
	for _, body := range []string{"deposit 100", "interest 1%", "withdraw 50", `"body":"a"`, `"body":"c"`} {
		if !strings.Contains(out0.String(), body) {
			t.Errorf("delivery %q missing:\n%s", body, out0)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"multicast", "a b", "--listen", "--endpoints", endpoints[0]}, `group name "a b"`},
		{[]string{"multicast", "x", "--endpoints", endpoints[0]}, "one of --send"},
		{[]string{"multicast", "x", "--send", "y", "--endpoints", "127.0.0.1:1"}, "127.0.0.1:1"},
	} {
		out, err := exec.Command(bin, c.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("cohort %s: %v %s, want an error naming %s", strings.Join(c.args, " "), err, out, c.want)
		}
	}
}

type cliError struct {
	err error
	out string
}

func (e *cliError) Error() string { return "cli: " + e.out }
