package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// viewBenchArgs simulate the README's large run: Ricart–Agrawala on 64
// processes, 102,496 events, without vector clocks (19 MB of JSONL).
var viewBenchArgs = []string{"sim", "mutex", "--algo", "ricart-agrawala", "--nodes", "64", "--seed", "1", "--vc", "off"}

// BenchmarkViewer measures the viewer on a 10⁵-event run in headless
// chromium, the page as cohort view --html writes it:
//
//   - open: each op navigates to the page and waits until the viewer has
//     drawn it. open-ms is the time from the start of the navigation to
//     the end of the first drawing, as the page measures it
//     (performance.now(): wall time in the browser, fetching and parsing
//     the 19 MB page included), script-ms the part of it the viewer's
//     script takes (parsing the data, the model, the first drawing);
//     cpu-ms/op is the CPU time the whole chromium process tree spent on
//     it (/proc), which a loaded machine inflates far less than wall time.
//   - pan-whole and pan-zoomed: each op is one frame of a pan, 80 pixels
//     a frame, one frame per requestAnimationFrame as a drag draws them,
//     over the whole run (at the level of detail) and zoomed in 50× (every
//     arrow in view drawn). draw-ms is the viewer's drawing of a frame,
//     frame-ms the time between frames (16.7 at 60 frames a second),
//     cpu-ms/op chromium's CPU time per frame, compositing included.
//
// Linux only (it reads /proc); skipped without chromium, like the browser
// tests. go test -run '^$' -bench Viewer -benchtime 5x ./cmd/cohort
func BenchmarkViewer(b *testing.B) {
	ctx := browser(b)
	dir := b.TempDir()
	jl, page := filepath.Join(dir, "big.jsonl"), filepath.Join(dir, "big.html")
	var out, errb bytes.Buffer
	if code := execute(append(slices.Clone(viewBenchArgs), "--trace", jl), &out, &errb); code != 0 {
		b.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	if code := execute([]string{"view", jl, "--html", page}, &out, &errb); code != 0 {
		b.Fatalf("view: exit %d: %s", code, errb.String())
	}
	url := "file://" + page
	root := chromedp.FromContext(ctx).Browser.Process().Pid
	open := func(b *testing.B) viewerStats {
		do(b, ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("canvas")))
		return stats(b, ctx)
	}

	b.Run("open", func(b *testing.B) {
		var ready, script float64
		var s viewerStats
		cpu := treeCPU(b, root)
		b.ResetTimer()
		for range b.N {
			s = open(b)
			ready += s.ReadyMs
			script += s.OpenMs
		}
		b.StopTimer()
		b.ReportMetric(float64(treeCPU(b, root)-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		b.ReportMetric(ready/float64(b.N), "open-ms")
		b.ReportMetric(script/float64(b.N), "script-ms")
		if s.Events < 100_000 || !s.LOD {
			b.Fatalf("opened %+v; want 10⁵ events drawn at a level of detail", s)
		}
	})
	for _, c := range []struct {
		name string
		zoom float64
		lod  bool
	}{{"pan-whole", 1, true}, {"pan-zoomed", 50, false}} {
		b.Run(c.name, func(b *testing.B) {
			open(b)
			s := eval[viewerStats](b, ctx, "window.cohortViewer.zoom("+strconv.FormatFloat(c.zoom, 'g', -1, 64)+")")
			if s.LOD != c.lod || s.ArrowsInView == 0 {
				b.Fatalf("zoomed %g×: %+v; want level of detail %v, arrows in view", c.zoom, s, c.lod)
			}
			cpu := treeCPU(b, root)
			b.ResetTimer()
			sctx, cancel := step(ctx)
			f, err := chromedp.Run(sctx, chromedp.Evaluate[struct {
				Draw  []float64 `json:"draw"`
				Frame []float64 `json:"frame"`
			}](fmt.Sprintf(panFrames, b.N), chromedp.EvalAwaitPromise))
			cancel()
			if err != nil || len(f.Draw) != b.N {
				b.Fatalf("panning %d frames: %v, %d drawn", b.N, err, len(f.Draw))
			}
			b.StopTimer()
			b.ReportMetric(float64(treeCPU(b, root)-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(mean(f.Draw), "draw-ms")
			b.ReportMetric(mean(f.Frame), "frame-ms")
		})
	}
}

// panFrames pans %d frames, one per animation frame, and resolves to
// each frame's drawing time and the time between frames (ms).
const panFrames = `new Promise((done) => {
	const n = %d, draw = [], frame = [];
	let last = -1;
	const step = (now) => {
		if (last >= 0) frame.push(now - last);
		last = now;
		if (draw.length === n) { done({draw, frame}); return; }
		draw.push(window.cohortViewer.pan(80).drawMs);
		requestAnimationFrame(step);
	};
	requestAnimationFrame(step);
})`

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// treeCPU is the CPU time (user and system) that process root and its
// descendants have used, those that ended and were waited for included,
// from /proc/PID/stat; it fails b where there is no /proc.
func treeCPU(b testing.TB, root int) time.Duration {
	b.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	type proc struct{ ppid, ticks int64 }
	procs := map[int64]proc{}
	for _, d := range dirs {
		pid, err := strconv.ParseInt(d.Name(), 10, 64)
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid ... utime stime cutime cstime: fields 4
		// and 14–17, counted after the command, which may hold spaces.
		k := bytes.LastIndexByte(stat, ')')
		if k < 0 {
			continue
		}
		f := strings.Fields(string(stat[k+1:]))
		if len(f) < 15 {
			continue
		}
		var p proc
		p.ppid, _ = strconv.ParseInt(f[1], 10, 64)
		for _, x := range f[11:15] {
			v, _ := strconv.ParseInt(x, 10, 64)
			p.ticks += v
		}
		procs[pid] = p
	}
	in := func(pid int64) bool {
		for range 64 { // bounded: a process tree is not deeper
			if pid == int64(root) {
				return true
			}
			p, ok := procs[pid]
			if !ok || p.ppid <= 1 {
				return false
			}
			pid = p.ppid
		}
		return false
	}
	var ticks int64
	for pid, p := range procs {
		if in(pid) {
			ticks += p.ticks
		}
	}
	const hz = 100 // USER_HZ, the unit of /proc/PID/stat's times on Linux
	return time.Duration(ticks) * time.Second / hz
}
