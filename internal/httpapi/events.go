package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// Events is a response of server-sent events, one JSON object per event
// ("data: {...}"), and an "error" event that says why a stream ends.
type Events struct {
	bw *bufio.Writer
	f  http.Flusher
}

// StartEvents answers with an event stream; if w cannot stream, it fails
// the request (500) and returns false.
func StartEvents(w http.ResponseWriter) (*Events, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		Fail(w, http.StatusInternalServerError, "streaming unsupported")
		return nil, false
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &Events{bw: bufio.NewWriter(w), f: f}, true
}

// Send writes v as one event, and sends what is buffered unless more
// says another event follows at once. An error means the reader is gone.
func (e *Events) Send(v any, more bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	e.bw.WriteString("data: ")
	e.bw.Write(b)
	e.bw.WriteString("\n\n")
	if more {
		return nil
	}
	if err := e.bw.Flush(); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

// End writes an error event saying why the stream ends.
func (e *Events) End(why string) {
	b, _ := json.Marshal(why)
	e.bw.WriteString("event: error\ndata: ")
	e.bw.Write(b)
	e.bw.WriteString("\n\n")
	if e.bw.Flush() == nil {
		e.f.Flush()
	}
}

// ErrStreamEnded: an event stream ended without an error event.
var ErrStreamEnded = errors.New("the stream ended")

// ReadEvents reads an event stream that StartEvents wrote, calling f with
// each event's data (lines at most max bytes), until r ends (then
// ErrStreamEnded) or the server ends it with an error event (then an
// error carrying its text).
func ReadEvents(r io.Reader, max int, f func(data []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), max)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := strings.TrimPrefix(line, "data: ")
			if event == "error" {
				return errors.New(data)
			}
			f([]byte(data))
		case line == "":
			event = ""
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return ErrStreamEnded
}

// Stream answers w with an event stream of the values from ch, until ctx
// ends (the client left), done closes (the service stopped) or behind
// closes (the reader fell behind the values' source): each of the last two
// ends the stream with an event that says so.
func Stream[T any](ctx context.Context, w http.ResponseWriter, done, behind <-chan struct{}, ch <-chan T) {
	ev, ok := StartEvents(w)
	if !ok {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-done:
			ev.End("the service stopped")
			return
		case <-behind:
			ev.End("this reader fell behind: reconnect")
			return
		case v := <-ch:
			if ev.Send(v, len(ch) > 0) != nil {
				return
			}
		}
	}
}
