package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cohort-go/cohort/trace"
	"golang.org/x/term"
)

// progress draws a one-line progress report on stderr for runs longer than
// a second, and only when stderr is a terminal.
type progress struct {
	w       io.Writer
	on      bool
	start   time.Time
	last    time.Time
	printed bool
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, on: ok && term.IsTerminal(int(f.Fd())), start: time.Now()}
}

func (p *progress) update(virtual time.Duration, events int64) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last = now
	p.printed = true
	rate := float64(events) / now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "\r  simulating: %s virtual, %d events (%.2g events/s)   ",
		trace.FormatNS(int64(virtual)), events, rate)
}

func (p *progress) done() {
	if p.printed {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
