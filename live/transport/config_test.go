package transport

import (
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

func TestConfigValidate(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	good := func() Config {
		return Config{Self: 0, Listen: "127.0.0.1:0", Peers: map[proc.ID]string{1: "127.0.0.1:7001"}, Secret: testSecret}
	}
	if c := good(); c.Validate() != nil {
		err := c.Validate()
		t.Fatalf("valid config: %v", err)
	}
	tlsNoCA := &tls.Config{Certificates: []tls.Certificate{{}}}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Self = -1 }, "Config.Self = -1"},
		{func(c *Config) { c.Listen = "" }, "Config.Listen is empty"},
		{func(c *Config) { c.Listen = "7000" }, `Config.Listen = "7000"`},
		{func(c *Config) { c.Peers[0] = "127.0.0.1:7000" }, "Config.Peers contains Self (p0)"},
		{func(c *Config) { c.Peers[2] = "nowhere" }, `Config.Peers[p2] = "nowhere"`},
		{func(c *Config) { c.Peers[-3] = "127.0.0.1:1" }, "Config.Peers[-3]"},
		{func(c *Config) { c.Secret = nil }, "Config.Secret and TLS are both unset"},
		{func(c *Config) { c.TLS = tlsNoCA }, "Config.Secret and TLS are both set"},
		{func(c *Config) { c.Secret = []byte("short") }, "Config.Secret is 5 bytes"},
		{func(c *Config) { c.Secret, c.TLS = nil, &tls.Config{} }, "Config.TLS.Certificates is empty"},
		{func(c *Config) { c.Secret, c.TLS = nil, tlsNoCA }, "Config.TLS.RootCAs is nil"},
		{func(c *Config) { c.QueueLen = -1 }, "Config.QueueLen = -1"},
		{func(c *Config) { c.MaxFrame = MaxMaxFrame + 1 }, "Config.MaxFrame = 1073741824"},
		{func(c *Config) { c.QueueBytes = 100 }, "Config.QueueBytes = 100 is less than MaxFrame = 1048576"},
		{func(c *Config) { c.IdleTimeout = -time.Second }, "Config.IdleTimeout = -1s"},
		{func(c *Config) { c.PingInterval = 3 * time.Second }, "Config.IdleTimeout = 5s must be at least twice PingInterval = 3s"},
		{func(c *Config) { c.MaxLinks = -2 }, "Config.MaxLinks = -2"},
		{func(c *Config) { c.MaxLinks = 6 }, "Config.MaxLinks = 6 needs LinkIdle > 0"},
		{func(c *Config) { c.DialBackoffMin = time.Minute }, "Config.DialBackoffMax = 5s is less than DialBackoffMin = 1m0s"},
	} {
		c := good()
		tc.edit(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an ErrConfig containing %q", err, tc.want)
		}
		if _, err := NewTCP(c); err == nil {
			t.Errorf("NewTCP accepted the config that should fail with %q", tc.want)
		}
	}
	// A Listener replaces Listen.
	c := good()
	c.Listen, c.Listener = "", ln
	tr, err := NewTCP(c)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Addr().String() != ln.Addr().String() {
		t.Errorf("Addr = %v, want the listener's %v", tr.Addr(), ln.Addr())
	}
	tr.Close()
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("Close left the listener open")
	}
}
