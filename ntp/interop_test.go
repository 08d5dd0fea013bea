package ntp

// Interoperability with chrony, both ways: our client queries a chronyd
// server, and chronyd queries our server. Each test starts its own chronyd
// on a free loopback port, from a configuration in its own temporary
// directory, and stops it. The daemons never touch the system clock (-x
// for the server, -Q for the client), open no command socket (cmdport 0,
// bindcmdaddress /) and write only their pid file, in the temporary
// directory — so a chronyd already running on the machine is no bother,
// and none is needed.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cohort-go/cohort/live/livetest"
)

// chronydPath returns the chronyd binary or fails the test saying how to
// install it: the interoperability tests are part of the suite, not an
// extra.
func chronydPath(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("chronyd"); err == nil {
		return p
	}
	for _, p := range []string{"/usr/sbin/chronyd", "/sbin/chronyd", "/usr/local/sbin/chronyd"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("chronyd not found: the NTP interoperability tests need chrony " +
		"(Debian/Ubuntu: apt-get install -y chrony; CI's .ci/run installs it)")
	return ""
}

// userArgs keeps chronyd in the user that runs the tests. As root, chronyd
// would switch to the _chrony user, who cannot write in the test's
// temporary directory; as anyone else it refuses to start without -U.
func userArgs() []string {
	if os.Geteuid() == 0 {
		return []string{"-u", "root"}
	}
	return []string{"-U"}
}

// freeUDPPort returns a loopback UDP port that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// writeConfig writes a chrony.conf of lines, "$DIR" standing for its
// directory, in a fresh temporary directory.
func writeConfig(t *testing.T, lines ...string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, "chrony.conf")
	var b bytes.Buffer
	for _, l := range lines {
		fmt.Fprintln(&b, strings.ReplaceAll(l, "$DIR", dir))
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, path
}

// startChronydServer runs chronyd as an NTP server on its undisciplined
// local clock (stratum 10) on a free loopback port, until the test ends,
// and returns its address once it answers.
func startChronydServer(t *testing.T) string {
	t.Helper()
	bin := chronydPath(t)
	port := freeUDPPort(t)
	_, conf := writeConfig(t,
		fmt.Sprintf("port %d", port),
		"bindaddress 127.0.0.1",
		"allow 127.0.0.1",
		"local stratum 10",
		"cmdport 0",
		"bindcmdaddress /",
		"pidfile $DIR/chronyd.pid",
	)
	var out livetest.Buffer // the daemon's output, read while it runs
	cmd := exec.Command(bin, append([]string{"-d", "-x", "-L", "0", "-f", conf}, userArgs()...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chronyd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("chronyd ignored SIGTERM for 5s; killed")
		}
		t.Logf("chronyd server output:\n%s", out.String())
	})

	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := Client{Timeout: 200 * time.Millisecond}
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("chronyd exited at start (%v):\n%s", err, out.String())
		default:
		}
		if _, err := c.Query(context.Background(), addr); err == nil {
			return addr
		} else if time.Now().After(deadline) {
			t.Fatalf("chronyd does not answer on %s after 10s (%v):\n%s", addr, err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Our client against chronyd. Both read the same clock, so the true offset
// is zero, and the exchange bounds the measured one by the delay.
func TestInteropOurClientQueriesChronyd(t *testing.T) {
	addr := startChronydServer(t)
	c := Client{Samples: 8}
	r, err := c.Query(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range r.Samples {
		t.Logf("sample %d: θ %v, δ %v (one way %v)", i, s.Offset, s.Delay, s.OneWay)
	}
	t.Logf("cohort ntp query %s: stratum %d, refid %s, offset %v, delay %v (one way %v), best of %d",
		addr, r.Stratum, r.RefID.Format(r.Stratum), r.Offset, r.Delay, r.OneWay, len(r.Samples))
	if r.Stratum != 10 || r.RefID != (RefID{127, 127, 1, 1}) || r.Leap != LeapNone {
		t.Errorf("stratum %d, refid %s, leap %d; want chronyd's local reference: 10, 127.127.1.1, 0",
			r.Stratum, r.RefID.Format(r.Stratum), r.Leap)
	}
	if r.Offset.Abs() > r.Delay+time.Millisecond {
		t.Errorf("offset %v to a server on the same clock, beyond δ = %v + 1ms", r.Offset, r.Delay)
	}
	if r.Delay < 0 || r.Delay > 100*time.Millisecond {
		t.Errorf("delay %v on loopback", r.Delay)
	}
	if len(r.Samples) != 8 {
		t.Errorf("%d of 8 samples answered", len(r.Samples))
	}
}

// chronydSays is what chronyd -Q prints: the correction the system clock
// would need to agree with the servers, positive if it is behind.
var chronydSays = regexp.MustCompile(`System clock wrong by (-?[0-9.]+) seconds`)

// chronydMeasurement is a line of chronyd's measurements.log: one reply
// from a server, as chronyd judged it.
type chronydMeasurement struct {
	Stratum   string
	Tests     string // the results of chronyd's tests 1-3, 5-7 and A-D: "111 111 1111" is all passed
	Offset    string // seconds
	PeerDelay string // the round trip, seconds
	RefID     string // hex
}

// chronydQuery runs chronyd -Q against the NTP server at port. It returns
// the clock error chronyd prints, in seconds, and the measurements it
// logged.
func chronydQuery(t *testing.T, port int) (float64, []chronydMeasurement) {
	t.Helper()
	bin := chronydPath(t)
	// A request every half second (poll -1): chronyd takes only the reply
	// to its latest request, and on a loaded machine a round trip can
	// outlast a shorter interval (at 1/64 s, chronyd kept one sample of
	// its burst and found "no suitable source").
	dir, conf := writeConfig(t,
		fmt.Sprintf("server 127.0.0.1 port %d iburst minpoll -1 maxpoll -1", port),
		"cmdport 0",
		"bindcmdaddress /",
		"pidfile $DIR/chronyd.pid",
		"logdir $DIR",
		"log measurements",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// -t 10: chronyd gives up by itself after 10 s.
	cmd := exec.CommandContext(ctx, bin, append([]string{"-Q", "-d", "-t", "10", "-L", "0", "-f", conf}, userArgs()...)...)
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		lg, _ := os.ReadFile(filepath.Join(dir, "measurements.log"))
		t.Fatalf("chronyd -Q: %v:\n%s\nits measurements:\n%s", err, out, lg)
	}
	m := chronydSays.FindSubmatch(out)
	if m == nil {
		t.Fatalf("chronyd -Q printed no clock error:\n%s", out)
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatalf("chronyd -Q: %q: %v", m[1], err)
	}
	t.Logf("chronyd -Q against 127.0.0.1:%d: %s", port, m[0])

	log, err := os.ReadFile(filepath.Join(dir, "measurements.log"))
	if err != nil {
		t.Fatalf("chronyd logged no measurements: %v", err)
	}
	var ms []chronydMeasurement
	for _, line := range strings.Split(string(log), "\n") {
		f := strings.Fields(line)
		// date time address leap stratum 123 567 ABCD LP RP score offset delay dispersion ...
		if len(f) < 17 || f[2] != "127.0.0.1" {
			continue
		}
		ms = append(ms, chronydMeasurement{Stratum: f[4], Tests: strings.Join(f[5:8], " "), Offset: f[11], PeerDelay: f[12], RefID: f[16]})
		t.Logf("chronyd measured: stratum %s, tests %s, offset %s s, round trip %s s, refid %s", f[4], strings.Join(f[5:8], " "), f[11], f[12], f[16])
	}
	return v, ms
}

// chronyd against our server, on the same clock and on one 250 ms ahead.
// chronyd's checks of a reply are thorough (RFC 5905's tests and more): a
// field out of place and it would find no usable server.
func TestInteropChronydQueriesOurServer(t *testing.T) {
	for _, c := range []struct {
		name  string
		ahead time.Duration
	}{{"same clock", 0}, {"server 250ms ahead", 250 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			addr, srv := startServer(t, ServerConfig{Clock: func() time.Time { return time.Now().Add(c.ahead) }})
			port := must(net.ResolveUDPAddr("udp", addr)).Port
			wrong, ms := chronydQuery(t, port)
			if len(ms) == 0 {
				t.Fatal("chronyd logged no measurement of our server")
			}
			// chronyd reports the correction the system clock would need:
			// a server ahead by d makes the clock wrong by +d, as θ. Each
			// sample's θ is within δ/2 of d (the two legs of its round trip
			// may differ by up to δ: on a loaded machine the request waits
			// for our server's goroutine, the reply does not), plus our
			// clock's reading. chronyd's verdict is a regression over the
			// samples, which may reach past them by a few of their spreads:
			// it is held to d ± the longest δ.
			var longest time.Duration
			for _, m := range ms {
				if m.Stratum != "10" || m.Tests != "111 111 1111" || m.RefID != "4C4F434C" {
					t.Errorf("chronyd's measurement %+v: want stratum 10, every test passed (111 111 1111), refid 4C4F434C (LOCL)", m)
				}
				theta, err1 := strconv.ParseFloat(m.Offset, 64)
				delta, err2 := strconv.ParseFloat(m.PeerDelay, 64)
				if err := errors.Join(err1, err2); err != nil {
					t.Fatalf("chronyd's measurement %+v: %v", m, err)
				}
				off, rtt := time.Duration(theta*float64(time.Second)), time.Duration(delta*float64(time.Second))
				if (off - c.ahead).Abs() > rtt/2+time.Millisecond {
					t.Errorf("chronyd measured θ = %v with δ = %v, want %v ± δ/2 + 1ms", off, rtt, c.ahead)
				}
				longest = max(longest, rtt)
			}
			if got := time.Duration(wrong * float64(time.Second)); (got - c.ahead).Abs() > longest+time.Millisecond {
				t.Errorf("chronyd says the clock is wrong by %v, want %v ± %v (the longest δ and 1 ms)", got, c.ahead, longest+time.Millisecond)
			}
			s := srv.Stats()
			t.Logf("our server: %+v", s)
			if s.Served == 0 || s.Malformed != 0 || s.WrongMode != 0 || s.SendFailed != 0 {
				t.Errorf("server stats %+v: want chronyd's requests all served", s)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
