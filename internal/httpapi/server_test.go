package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serve starts a server of h within lim on a loopback port.
func serve(t *testing.T, h http.Handler, lim Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(h, lim)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { Reply(w, http.StatusOK, "ok") })

// get sends a GET on c (keep-alive) and returns the status.
func get(t *testing.T, c net.Conn, r *bufio.Reader) (int, string) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestConnectionLimit: beyond MaxConns, a connection is answered 503 with
// a reason, at once; when one of the others closes, its slot is free.
func TestConnectionLimit(t *testing.T) {
	addr := serve(t, ok, Limits{MaxConns: 4})
	var conns []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if code, _ := get(t, c, bufio.NewReader(c)); code != http.StatusOK {
			t.Fatalf("connection %d: HTTP %d", len(conns), code)
		}
		conns = append(conns, c)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, extra, bufio.NewReader(extra))
	extra.Close()
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "too many connections") {
		t.Fatalf("a fifth connection: HTTP %d %q, want 503 naming the cause", code, body)
	}
	conns[0].Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		code, _ := get(t, c, bufio.NewReader(c))
		c.Close()
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot of a closed connection was never freed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRefusalAnswersTheRequest: a Go HTTP client over the limit gets the
// 503 as the answer to its request — the server reads the request before
// it answers, so the client neither calls the answer unsolicited (and
// logs it) nor fails with a reset connection. Many clients at once, each
// on a fresh connection.
func TestRefusalAnswersTheRequest(t *testing.T) {
	var logged bytes.Buffer
	var mu sync.Mutex
	log.SetOutput(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logged.Write(p) }))
	defer log.SetOutput(os.Stderr)
	addr := serve(t, ok, Limits{MaxConns: 1})
	hold, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if code, _ := get(t, hold, bufio.NewReader(hold)); code != http.StatusOK {
		t.Fatalf("the first connection: HTTP %d", code)
	}
	var wg sync.WaitGroup
	codes := make(chan string, 40)
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A client slow to write its request after connecting, so an
			// answer sent at once would be there before the request.
			dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				time.Sleep(20 * time.Millisecond)
				return c, err
			}
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: dial}, Timeout: 10 * time.Second}
			r, err := c.Get("http://" + addr + "/")
			if err != nil {
				codes <- err.Error()
				return
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			codes <- fmt.Sprintf("%d %s", r.StatusCode, b)
		}()
	}
	wg.Wait()
	close(codes)
	for c := range codes {
		if !strings.HasPrefix(c, "503 ") || !strings.Contains(c, "too many connections") {
			t.Errorf("a client over the limit got %q, want the 503 naming the cause", c)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logged.String(), "Unsolicited") {
		t.Errorf("the client logged: %s", logged.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestIdleConnectionsAreClosed: a keep-alive connection that carries no
// request for IdleTimeout is closed by the server.
func TestIdleConnectionsAreClosed(t *testing.T) {
	addr := serve(t, ok, Limits{IdleTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	get(t, c, r)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := r.ReadByte(); err != io.EOF {
		t.Fatalf("an idle connection: read %v, want EOF (closed by the server)", err)
	}
}

// TestSlowBodyIsCut: a body dripped a byte at a time does not hold its
// connection longer than ReadTimeout; a request that waits (a long poll)
// after it was read is not cut.
func TestSlowBodyIsCut(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			return
		}
		if r.URL.Path == "/wait" {
			time.Sleep(time.Second) // a long poll, longer than ReadTimeout
		}
		Reply(w, http.StatusOK, "ok")
	})
	addr := serve(t, h, Limits{ReadTimeout: 300 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
	start := time.Now()
	for time.Since(start) < 10*time.Second {
		if _, err := c.Write([]byte("x")); err != nil {
			break // the server closed it
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d := time.Since(start); d >= 10*time.Second {
		t.Fatalf("a dripped body held its connection for %v", d)
	}

	resp, err := http.Get("http://" + addr + "/wait")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a long poll: HTTP %d", resp.StatusCode)
	}
}

// TestMaxConnsLeavesDescriptors: by default the limit leaves FileReserve
// descriptors of the process's limit to the rest of the node.
func TestMaxConnsLeavesDescriptors(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	low := rl
	low.Cur = 600
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	n := NewServer(ok, Limits{}).MaxConns()
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if n != 600-FileReserve {
		t.Fatalf("with 600 descriptors: MaxConns %d, want %d", n, 600-FileReserve)
	}
	if n := NewServer(ok, Limits{MaxConns: 7}).MaxConns(); n != 7 {
		t.Fatalf("MaxConns %d, want the 7 asked", n)
	}
}
