package transport

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/cohort-go/cohort/proc"
)

// Files written by GenerateCerts and read by LoadTLS.
const (
	CAFile    = "ca.pem"
	CAKeyFile = "ca-key.pem"
)

// NodeCertFile and NodeKeyFile name member id's certificate and key:
// "node-3.pem" and "node-3-key.pem".
func NodeCertFile(id proc.ID) string { return CertName(id) + ".pem" }

// NodeKeyFile: see NodeCertFile.
func NodeKeyFile(id proc.ID) string { return CertName(id) + "-key.pem" }

// certValidity is how long generated certificates are valid.
const certValidity = 365 * 24 * time.Hour

// GenerateCerts writes a development CA and a certificate for each member
// 0 .. nodes-1 into dir (created if needed), as PEM files: CAFile and
// CAKeyFile, and for each member NodeCertFile and NodeKeyFile. Keys are
// ECDSA P-256, readable only by the owner; certificates are valid for a
// year and member i's carries CertName(i) as its DNS name, for both server
// and client authentication. It refuses to overwrite an existing file (the
// error wraps fs.ErrExist). The CA is for development and tests: anyone
// with its key can mint members.
func GenerateCerts(dir string, nodes int) error {
	if nodes < 1 {
		return fmt.Errorf("transport: GenerateCerts: %d nodes: at least 1 is required", nodes)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("transport: GenerateCerts: %w", err)
	}
	ca, caKey, err := newCA("Cohort development CA")
	if err != nil {
		return fmt.Errorf("transport: GenerateCerts: %w", err)
	}
	caKeyPEM, err := keyPEM(caKey)
	if err != nil {
		return fmt.Errorf("transport: GenerateCerts: %w", err)
	}
	files := []pemFile{{CAFile, certPEM(ca), 0o644}, {CAKeyFile, caKeyPEM, 0o600}}
	for i := range nodes {
		id := proc.ID(i)
		cert, key, err := newNodeCert(ca, caKey, id)
		if err != nil {
			return fmt.Errorf("transport: GenerateCerts: %v: %w", id, err)
		}
		kp, err := keyPEM(key)
		if err != nil {
			return fmt.Errorf("transport: GenerateCerts: %v: %w", id, err)
		}
		files = append(files, pemFile{NodeCertFile(id), certPEM(cert), 0o644}, pemFile{NodeKeyFile(id), kp, 0o600})
	}
	// Check first, so that a refusal leaves dir as it was.
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, f.name)); err == nil {
			return fmt.Errorf("transport: GenerateCerts: %s: %w", filepath.Join(dir, f.name), fs.ErrExist)
		}
	}
	for _, f := range files {
		if err := writeNew(filepath.Join(dir, f.name), f.data, f.perm); err != nil {
			return fmt.Errorf("transport: GenerateCerts: %w", err)
		}
	}
	return nil
}

// LoadTLS reads member id's certificate and key and the CA from dir, as
// written by GenerateCerts, and returns the TLS configuration for
// Config.TLS.
func LoadTLS(dir string, id proc.ID) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, NodeCertFile(id)), filepath.Join(dir, NodeKeyFile(id)))
	if err != nil {
		return nil, fmt.Errorf("transport: LoadTLS: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("transport: LoadTLS: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("transport: LoadTLS: %s holds no certificate", filepath.Join(dir, CAFile))
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS13}, nil
}

// newCA makes a self-signed CA certificate and its key.
func newCA(name string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Cohort"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// newNodeCert makes member id's certificate, signed by ca.
func newNodeCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, id proc.ID) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: CertName(id), Organization: []string{"Cohort"}},
		DNSNames:     []string{CertName(id)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func keyPEM(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

type pemFile struct {
	name string
	data []byte
	perm os.FileMode
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}
