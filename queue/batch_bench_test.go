package queue

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// A batch of 32 puts of 128 bytes through the handler, in memory (no
// disk, no network): as frames (POST /v1/queues/q/batch, PutBatch's) and
// as JSON with base64 bodies (POST /v1/queues:tx). Every 100 batches the
// queue is emptied, so that it never fills.
func BenchmarkBatchFrames(b *testing.B) { benchBatch(b, true) }
func BenchmarkBatchJSON(b *testing.B)   { benchBatch(b, false) }

func benchBatch(b *testing.B, frames bool) {
	m, err := Open(Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	h := Handler(m)
	msg := bytes.Repeat([]byte("abcdefgh"), 16)
	var body []byte
	puts := make([]TxPut, 32)
	for i := range puts {
		body = appendFrame(body, msg)
		puts[i] = TxPut{Queue: "q", Body: msg}
	}
	path := "/v1/queues/q/batch"
	if !frames {
		path = "/v1/queues:tx"
		body, _ = json.Marshal(TxRequest{Puts: puts})
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", path, bytes.NewReader(body)))
		if w.Code != 200 {
			b.Fatal(w.Code, w.Body.String())
		}
		if n++; n%100 == 0 {
			for {
				msg, ok, _ := m.Poll("q", 0)
				if !ok {
					break
				}
				m.Ack("q", msg.ID)
			}
		}
	}
}
