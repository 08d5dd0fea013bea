package httpapi

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"
)

// Profiles serves the Go runtime's profiles of the running process
// under prefix (say "/debug/pprof/"), in the format `go tool pprof`
// reads, behind the bearer token: a profile names what the process
// holds (goroutines' stacks, where its memory was allocated), so it is
// served to whoever holds the cluster's credentials and to nobody else.
// With no token, every request is refused (403): a node open to
// anyone on its address does not open its insides too.
//
//	GET prefix                       the profiles, one a line
//	GET prefix{heap,allocs,goroutine,block,mutex,threadcreate}
//	    ?debug=1                     as text (debug=2: goroutines' full stacks)
//	    ?gc=1                        heap: collect first, so that it counts what is live only
//	GET prefix+"profile"?seconds=N   the CPU for N seconds (1..MaxProfileSeconds, default 10)
//
// It uses runtime/pprof rather than net/http/pprof, whose import
// registers the same routes, without any token, on http.DefaultServeMux.
func Profiles(prefix, token string) http.Handler {
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			Fail(w, http.StatusMethodNotAllowed, "profiles are read with GET")
			return
		}
		name := strings.TrimPrefix(r.URL.Path, prefix)
		switch {
		case name == "":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintf(w, "profile\tthe CPU, ?seconds=N (at most %d)\n", MaxProfileSeconds)
			for _, p := range pprof.Profiles() {
				fmt.Fprintf(w, "%s\t%d\n", p.Name(), p.Count())
			}
		case name == "profile":
			cpuProfile(w, r)
		default:
			p := pprof.Lookup(name)
			if p == nil {
				Fail(w, http.StatusNotFound, fmt.Sprintf("no profile %q (GET %s lists them)", name, prefix))
				return
			}
			debug, _ := strconv.Atoi(r.FormValue("debug"))
			if name == "heap" && r.FormValue("gc") == "1" {
				runtime.GC()
			}
			if debug != 0 {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			} else {
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name+".pb.gz"))
			}
			_ = p.WriteTo(w, debug)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if token == "" {
			Fail(w, http.StatusForbidden, "profiles are served only by a node with an API token (api_token in node.yaml), and only to requests that carry it")
			return
		}
		RequireToken(token, serve).ServeHTTP(w, r)
	})
}

// MaxProfileSeconds bounds a CPU profile's duration.
const MaxProfileSeconds = 120

func cpuProfile(w http.ResponseWriter, r *http.Request) {
	sec := 10
	if s := r.FormValue("seconds"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxProfileSeconds {
			Fail(w, http.StatusBadRequest, fmt.Sprintf("seconds=%s: want 1 to %d", s, MaxProfileSeconds))
			return
		}
		sec = n
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="profile.pb.gz"`)
	if err := pprof.StartCPUProfile(w); err != nil {
		// One CPU profile at a time, in the whole process.
		w.Header().Del("Content-Disposition")
		Fail(w, http.StatusConflict, "a CPU profile is already being taken: "+err.Error())
		return
	}
	t := time.NewTimer(time.Duration(sec) * time.Second)
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
	}
	pprof.StopCPUProfile()
}
