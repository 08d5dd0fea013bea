package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEventsWriteDataAndEnd(t *testing.T) {
	w := httptest.NewRecorder()
	ev, ok := StartEvents(w)
	if !ok {
		t.Fatal("a recorder can stream")
	}
	if err := ev.Send(map[string]int{"a": 1}, true); err != nil {
		t.Fatal(err)
	}
	if w.Body.Len() != 0 {
		t.Errorf("an event followed by more was sent at once: %q", w.Body.String())
	}
	ev.Send("x", false)
	ev.End(`fell "behind"`)
	want := "data: {\"a\":1}\n\ndata: \"x\"\n\nevent: error\ndata: \"fell \\\"behind\\\"\"\n\n"
	if got := w.Body.String(); got != want || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("stream %q (%s), want %q", got, w.Header().Get("Content-Type"), want)
	}
}

func TestReadEventsReadsWhatStartEventsWrote(t *testing.T) {
	w := httptest.NewRecorder()
	ev, _ := StartEvents(w)
	ev.Send(1, true)
	ev.Send(2, false)
	var got []string
	err := ReadEvents(strings.NewReader(w.Body.String()), 1<<10, func(d []byte) { got = append(got, string(d)) })
	if err != ErrStreamEnded || strings.Join(got, ",") != "1,2" {
		t.Errorf("read %v, %v; want 1,2 and ErrStreamEnded", got, err)
	}
	ev.End("gone")
	err = ReadEvents(strings.NewReader(w.Body.String()), 1<<10, func([]byte) {})
	if err == nil || err.Error() != `"gone"` {
		t.Errorf("an error event read as %v", err)
	}
}
