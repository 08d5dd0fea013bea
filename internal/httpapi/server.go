package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// Limits bound what clients may hold of a node's API server. Requests
// that wait (a lock's long poll, a watch, a group's event stream) have no
// write deadline: they last as long as the client keeps them.
type Limits struct {
	// MaxConns is how many connections may be open at once; a connection
	// beyond is answered 503 and closed. 0: DefaultMaxConns, lowered to
	// leave FileReserve descriptors of the process's limit free for the
	// links to peers and the storage.
	MaxConns int
	// ReadTimeout bounds the reading of a request, headers and body (a
	// body sent a byte at a time). 0: 30 s.
	ReadTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that has carried no
	// request for this long. 0: 2 min.
	IdleTimeout time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxConns    = 4096
	FileReserve        = 256
	DefaultReadTimeout = 30 * time.Second
	DefaultIdleTimeout = 2 * time.Minute
	maxHeaderBytes     = 64 << 10
)

// Server is an API server within Limits.
type Server struct {
	http.Server
	maxConns int
}

// NewServer returns a server of h within lim.
func NewServer(h http.Handler, lim Limits) *Server {
	s := &Server{maxConns: lim.MaxConns}
	if s.maxConns <= 0 {
		s.maxConns = DefaultMaxConns
		var rl syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) == nil && rl.Cur < uint64(s.maxConns)+FileReserve {
			s.maxConns = max(int(rl.Cur)-FileReserve, int(rl.Cur)/2, 1)
		}
	}
	s.Handler = h
	s.ReadHeaderTimeout = 5 * time.Second
	s.ReadTimeout = or(lim.ReadTimeout, DefaultReadTimeout)
	s.IdleTimeout = or(lim.IdleTimeout, DefaultIdleTimeout)
	s.MaxHeaderBytes = maxHeaderBytes
	return s
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// MaxConns is how many connections the server takes at once.
func (s *Server) MaxConns() int { return s.maxConns }

// Serve serves connections from ln, at most MaxConns at once.
func (s *Server) Serve(ln net.Listener) error {
	return s.Server.Serve(&limitListener{Listener: ln, slots: make(chan struct{}, s.maxConns), refusing: make(chan struct{}, 64)})
}

// limitListener hands out connections while it has slots; the others it
// answers 503 itself.
type limitListener struct {
	net.Listener
	slots    chan struct{}
	refusing chan struct{} // refusals under way: bounded too
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &slotConn{Conn: c, free: func() { <-l.slots }}, nil
		default:
		}
		select {
		case l.refusing <- struct{}{}:
			go func() {
				refuse(c)
				<-l.refusing
			}()
		default:
			c.Close()
		}
	}
}

// tooMany is the whole answer to a connection beyond the limit.
var tooMany = func() string {
	body := `{"error":"too many connections open to this node"}`
	return fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

// refuse answers a connection beyond the limit, then closes it. It reads
// the request's head first (within a second), so the answer is the
// answer to a request — an HTTP client that finds an answer on a
// connection before it sent anything calls it unsolicited and drops it —
// and it reads what else the client sent before closing (a close with
// unread data would reset the connection, and the client might never
// read the answer).
func refuse(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	readHead(c)
	_, _ = io.WriteString(c, tooMany)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// readHead reads from c until the end of a request's head (an empty
// line), 8 KiB, an error or c's deadline, whichever comes first.
func readHead(c net.Conn) {
	var buf [8 << 10]byte
	n := 0
	for n < len(buf) {
		m, err := c.Read(buf[n:])
		n += m
		if bytes.Contains(buf[max(0, n-m-3):n], []byte("\r\n\r\n")) || err != nil {
			return
		}
	}
}

// slotConn gives its slot back when it closes.
type slotConn struct {
	net.Conn
	once sync.Once
	free func()
}

func (c *slotConn) Close() error {
	c.once.Do(c.free)
	return c.Conn.Close()
}
