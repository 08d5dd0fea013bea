package transport

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// testCA is a throwaway certificate authority.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	cert, key, err := newCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert, key}
}

// config returns member id's TLS configuration, with a certificate issued
// by ca for id and trusting only trust.
func (ca *testCA) config(t *testing.T, id proc.ID, trust *testCA) *tls.Config {
	t.Helper()
	cert, key, err := newNodeCert(ca.cert, ca.key, id)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(trust.cert)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}},
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS13,
	}
}

func TestTLS(t *testing.T) {
	ca, other := newTestCA(t, "Cohort test CA"), newTestCA(t, "Some other CA")
	logs := newLogBuffer()
	trs := newTCPCluster(t, 2, func(c *Config) {
		c.Secret, c.TLS = nil, ca.config(t, c.Self, ca)
		if c.Self == 0 {
			c.Logger = logs.logger()
		}
	})
	a, b := trs[0], trs[1]
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("member 0's log:\n%s", logs)
		}
	})
	boxA, boxB := newInbox(), newInbox()
	a.Start(boxA.handle)
	b.Start(boxB.handle)
	const n = 5000
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := sendAll(a, 1, 0, n, 32, 5*time.Second); err != nil {
			t.Error(err)
		}
	})
	wg.Go(func() {
		if err := sendAll(b, 0, 0, n, 32, 5*time.Second); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	waitClosed(t, boxA.expect(1, n), 5*time.Second, "p1→p0 over TLS")
	waitClosed(t, boxB.expect(0, n), 5*time.Second, "p0→p1 over TLS")
	boxA.check(t)
	boxB.check(t)

	// A client certificate from another CA, presented regardless of the
	// CAs the acceptor asks for.
	forced := other.config(t, 1, ca)
	forcedCert := forced.Certificates[0]
	forced.Certificates = nil
	forced.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &forcedCert, nil }

	// Intruders, each on its own connection to member 0.
	intruders := []struct {
		name   string
		cfg    *tls.Config // nil: not TLS at all
		claim  proc.ID
		reason string
	}{
		// A certificate from another CA (that trusts the cluster CA, so
		// that it gets as far as presenting it).
		{"other-ca", other.config(t, 1, ca), 1, "tls handshake: tls: client didn't provide a certificate"},
		{"other-ca-forced", forced, 1, "x509: certificate signed by unknown authority"},
		// A genuine certificate from the cluster CA, for node 2 (not a
		// member here), claiming to be member 1.
		{"impostor", ca.config(t, 2, ca), 1, "impostor: claims to be p1 but x509: certificate is valid for node-2, not node-1"},
		{"no-tls", nil, 1, "tls: first record does not look like a TLS handshake"},
	}
	for _, in := range intruders {
		t.Run(in.name, func(t *testing.T) {
			conn := dial(t, a.Addr())
			defer conn.Close()
			local := conn.LocalAddr().String()
			var err error
			if in.cfg != nil {
				_, _, err = newAuth(&Config{TLS: in.cfg}).dial(conn, in.claim, 0)
			} else {
				_, _, err = (&auth{secret: testSecret}).dial(conn, in.claim, 0)
			}
			if err == nil {
				t.Fatal("handshake succeeded")
			}
			if _, err := logs.waitLine(3*time.Second, "transport: handshake rejected", "remote="+local, in.reason); err != nil {
				t.Error(err)
			}
		})
	}
	if got := a.Stats().Rejected; got != uint64(len(intruders)) {
		t.Errorf("Stats.Rejected = %d, want %d", got, len(intruders))
	}
}

// TestTLSDialerChecksAcceptor: a member that dials an address answered by
// another member's certificate refuses the connection.
func TestTLSDialerChecksAcceptor(t *testing.T) {
	ca := newTestCA(t, "Cohort test CA")
	logs := newLogBuffer()
	lnC := listen(t)
	cfgC := fastConfig(2, lnC, map[proc.ID]string{0: deadAddr(t)}, testLogger(t))
	cfgC.Secret, cfgC.TLS = nil, ca.config(t, 2, ca)
	c, err := NewTCP(cfgC)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Start(func(proc.ID, []byte) {})

	// Member 0 believes member 1 is at c's address.
	cfgA := fastConfig(0, listen(t), map[proc.ID]string{1: lnC.Addr().String()}, logs.logger())
	cfgA.Secret, cfgA.TLS = nil, ca.config(t, 0, ca)
	a, err := NewTCP(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Start(func(proc.ID, []byte) {})
	if _, err := logs.waitLine(3*time.Second, "transport: handshake failed", "peer=p1", "certificate is valid for node-2, not node-1"); err != nil {
		t.Fatalf("%v; log:\n%s", err, logs)
	}
	if s := a.Stats().Peers[1]; s.Connected || s.Rejected == 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestGenerateCerts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	const n = 3
	if err := GenerateCerts(dir, n); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CAFile, CAKeyFile, NodeCertFile(2), NodeKeyFile(2)} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, "-key.pem") && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", f, fi.Mode().Perm())
		}
	}
	if err := GenerateCerts(dir, n); !errors.Is(err, fs.ErrExist) {
		t.Errorf("GenerateCerts into a used directory: %v, want fs.ErrExist", err)
	}
	if _, err := LoadTLS(dir, n); err == nil {
		t.Errorf("LoadTLS for member %d, which has no certificate: no error", n)
	}

	trs := newTCPCluster(t, n, func(c *Config) {
		cfg, err := LoadTLS(dir, c.Self)
		if err != nil {
			t.Fatal(err)
		}
		c.Secret, c.TLS = nil, cfg
	})
	exchangeSome(t, trs, 100)
}

// exchangeSome has every member send n payloads to every other and waits
// for them.
func exchangeSome(t *testing.T, trs []*TCP, n uint64) {
	var all []Transport
	for _, tr := range trs {
		all = append(all, tr)
	}
	exchange(t, all, n)
}
