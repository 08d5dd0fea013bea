package transport

import (
	"bytes"
	"testing"

	"github.com/cohort-go/cohort/proc"
)

func TestHelloEncoding(t *testing.T) {
	h := hello{version: protocolVersion, mode: modeTLS, from: 3, to: 1234567, incarnation: 1<<64 - 2}
	h.nonce[0], h.nonce[31] = 1, 2
	b := h.marshal()
	if len(b) != helloLen || !bytes.HasPrefix(b, helloMagic) {
		t.Fatalf("hello is %d bytes: %q", len(b), b)
	}
	if got := parseHello(b); got != h {
		t.Errorf("round trip: %+v, want %+v", got, h)
	}
}

func TestCertName(t *testing.T) {
	if got := CertName(proc.ID(3)); got != "node-3" {
		t.Errorf("CertName(3) = %q", got)
	}
}
