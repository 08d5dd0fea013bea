package live

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// WriteMetrics writes the node's counters in the Prometheus text format.
func (n *Node) WriteMetrics(w io.Writer) {
	n.mu.Lock()
	services := make([]*Service, 0, len(n.services))
	for _, s := range n.services {
		services = append(services, s)
	}
	n.mu.Unlock()
	slices.SortFunc(services, func(a, b *Service) int { return strings.Compare(a.name, b.name) })

	type family struct{ name, help, typ string }
	fams := []family{
		{"cohort_messages_sent_total", "Messages sent, by service and kind.", "counter"},
		{"cohort_messages_received_total", "Messages received, by service.", "counter"},
		{"cohort_messages_dropped_total", "Messages the transport refused (queue full), by service.", "counter"},
		{"cohort_outputs_total", "Outputs of the algorithm, by service.", "counter"},
		{"cohort_inbox_depth", "Events waiting in the service's inbox.", "gauge"},
		{"cohort_handler_seconds", "Time spent in the algorithm's handlers.", "summary"},
	}
	stats := make([]ServiceStats, len(services))
	for i, s := range services {
		stats[i] = s.Stats()
	}
	for _, f := range fams {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		for i, s := range services {
			st, l := stats[i], fmt.Sprintf(`service=%q,algo=%q`, s.name, s.algo.Name)
			switch f.name {
			case "cohort_messages_sent_total":
				kinds := make([]string, 0, len(st.ByKind))
				for k := range st.ByKind {
					kinds = append(kinds, k)
				}
				slices.Sort(kinds)
				for _, k := range kinds {
					fmt.Fprintf(w, "%s{%s,kind=%q} %d\n", f.name, l, k, st.ByKind[k])
				}
			case "cohort_messages_received_total":
				fmt.Fprintf(w, "%s{%s} %d\n", f.name, l, st.Received)
			case "cohort_messages_dropped_total":
				fmt.Fprintf(w, "%s{%s} %d\n", f.name, l, st.Dropped)
			case "cohort_outputs_total":
				fmt.Fprintf(w, "%s{%s} %d\n", f.name, l, st.Outputs)
			case "cohort_inbox_depth":
				fmt.Fprintf(w, "%s{%s} %d\n", f.name, l, len(s.inbox))
			case "cohort_handler_seconds":
				fmt.Fprintf(w, "%s_sum{%s} %g\n%s_count{%s} %d\n", f.name, l, st.HandlerTime.Seconds(), f.name, l, st.Handled)
			}
		}
	}
	if m, ok := n.cfg.Transport.(interface{ WriteMetrics(io.Writer) }); ok {
		m.WriteMetrics(w)
	}
}

// MetricsHandler serves WriteMetrics at /metrics.
func (n *Node) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		n.WriteMetrics(w)
	})
}
