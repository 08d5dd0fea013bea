package queuetest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cohort-go/cohort/queue"
	"github.com/cohort-go/cohort/queue/queuetest"
)

// The history holds against a sound queue, and catches the two
// violations it is for, each planted in front of a sound queue: a put
// acknowledged and never stored, and an ack answered and never applied
// (the message is delivered again once its lease runs out).
func TestHistoryCatchesLostPutsAndRedeliveries(t *testing.T) {
	var puts atomic.Int64
	for _, c := range []struct {
		name  string
		drop  func(r *http.Request) bool // answered 200, not served
		wants string                     // "": the history holds
	}{
		{"sound", func(*http.Request) bool { return false }, ""},
		{"put acknowledged, not stored", func(r *http.Request) bool {
			return r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/ack") && puts.Add(1)%5 == 0
		}, "acknowledged puts never delivered"},
		{"ack answered, not applied", func(r *http.Request) bool {
			return strings.HasSuffix(r.URL.Path, "/ack")
		}, "deliveries of messages whose ack had been answered"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := queue.Open(queue.Config{})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			sound := queue.Handler(m)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.drop(r) {
					w.Write([]byte(`{"id":1}`))
					return
				}
				sound.ServeHTTP(w, r)
			}))
			defer srv.Close()
			h := queuetest.Start("jobs", "", srv.URL)
			deadline := time.Now().Add(20 * time.Second)
			for h.Acknowledged() < 20 || (c.wants != "" && h.Check() == nil) {
				if time.Now().After(deadline) {
					t.Fatalf("after 20 s: %s; check: %v", h.Summary(), h.Check())
				}
				time.Sleep(10 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			drained := h.Drain(ctx)
			err = h.Check()
			t.Logf("%s; drain: %v; check: %v", h.Summary(), drained, err)
			if c.wants == "" {
				if drained != nil || err != nil {
					t.Fatalf("a sound queue: drain %v, check %v", drained, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wants) {
				t.Fatalf("check: %v; want it to say %q", err, c.wants)
			}
		})
	}
}

// The history catches a put stored twice — what a resend of a put
// applied before does without a duplicate table — planted in front of a
// sound queue, and holds against a stream of puts to a sound queue.
func TestHistoryCatchesPutsStoredTwice(t *testing.T) {
	for _, twice := range []bool{false, true} {
		m, err := queue.Open(queue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		sound := queue.Handler(m)
		var puts atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if twice && r.Method == http.MethodPost && r.URL.Path == "/v1/queues/jobs" && puts.Add(1)%5 == 0 {
				body, _ := io.ReadAll(r.Body)
				m.Put("jobs", body)
				id, _ := m.Put("jobs", body)
				fmt.Fprintf(w, `{"queue":"jobs","id":%d}`, id)
				return
			}
			sound.ServeHTTP(w, r)
		}))
		defer srv.Close()
		var h *queuetest.History
		if twice {
			h = queuetest.Start("jobs", "", srv.URL)
		} else {
			h = queuetest.StartStream("jobs", "", 16, srv.URL)
		}
		deadline := time.Now().Add(20 * time.Second)
		for h.Acknowledged() < 50 || (twice && h.Check() == nil) {
			if time.Now().After(deadline) {
				t.Fatalf("after 20 s: %s; check: %v", h.Summary(), h.Check())
			}
			time.Sleep(10 * time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		drained := h.Drain(ctx)
		cancel()
		err = h.Check()
		t.Logf("stored twice %v: %s; drain: %v; check: %v", twice, h.Summary(), drained, err)
		switch {
		case !twice && (drained != nil || err != nil):
			t.Fatalf("a stream to a sound queue: drain %v, check %v", drained, err)
		case twice && (err == nil || !strings.Contains(err.Error(), "stored twice")):
			t.Fatalf("check: %v; want it to find puts stored twice", err)
		}
	}
}
