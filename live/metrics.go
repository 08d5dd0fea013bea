package live

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/live/transport"
	"github.com/cohort-go/cohort/proc"
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
	fmt.Fprintf(w, "# HELP cohort_services Services the node runs.\n# TYPE cohort_services gauge\ncohort_services %d\n", len(services))
	fmt.Fprintf(w, "# HELP cohort_services_reaped_total Idle services stopped (Node.Reap); each starts again when next needed.\n"+
		"# TYPE cohort_services_reaped_total counter\ncohort_services_reaped_total %d\n", n.reaped.Load())
	n.writeTransportMetrics(w)
}

// writeTransportMetrics exports the transport's per-peer counters:
// connection state, queue depth, traffic, backpressure, reconnects and
// what they cost (frames resent, frames dropped for a restart).
func (n *Node) writeTransportMetrics(w io.Writer) {
	st := n.cfg.Transport.Stats()
	peers := make([]int, 0, len(st.Peers))
	for id := range st.Peers {
		peers = append(peers, int(id))
	}
	slices.Sort(peers)
	gauge := func(name, help string, v func(ps transportPeer) float64, typ string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for _, id := range peers {
			fmt.Fprintf(w, "%s{peer=\"%d\"} %g\n", name, id, v(st.Peers[proc.ID(id)]))
		}
	}
	gauge("cohort_peer_connected", "1 if the connection to the peer (one per pair of members) is up and authenticated.", func(p transportPeer) float64 {
		if p.Connected {
			return 1
		}
		return 0
	}, "gauge")
	gauge("cohort_peer_queue_depth", "Frames queued for the peer, not yet handed to the connection.", func(p transportPeer) float64 { return float64(p.Queued) }, "gauge")
	gauge("cohort_peer_sent_bytes_total", "Bytes handed to the connection to the peer.", func(p transportPeer) float64 { return float64(p.SentBytes) }, "counter")
	gauge("cohort_peer_received_bytes_total", "Bytes received from the peer.", func(p transportPeer) float64 { return float64(p.ReceivedBytes) }, "counter")
	gauge("cohort_peer_backpressured_total", "Sends to the peer refused because its queue was full.", func(p transportPeer) float64 { return float64(p.Backpressured) }, "counter")
	gauge("cohort_peer_unacked", "Frames handed to the connection to the peer and not yet acknowledged by it.", func(p transportPeer) float64 { return float64(p.Unacked) }, "gauge")
	gauge("cohort_peer_reconnects_total", "Connections to the peer established after the first.", func(p transportPeer) float64 { return float64(p.Reconnects) }, "counter")
	gauge("cohort_peer_resent_total", "Frames written again on a new connection to the peer because it had not acknowledged them.", func(p transportPeer) float64 { return float64(p.Resent) }, "counter")
	gauge("cohort_peer_dropped_restart_total", "Frames sent to the peer and dropped unacknowledged because it restarted.", func(p transportPeer) float64 { return float64(p.DroppedRestart) }, "counter")
	gauge("cohort_peer_stalled_total", "Connections to the peer cut because it stopped reading (its queue full, nothing acknowledged and no data from it, for the idle timeout), or given up because it did not resume a new one.", func(p transportPeer) float64 { return float64(p.Stalled) }, "counter")
	if d := st.Datagrams; d.On {
		fmt.Fprintf(w, "# HELP cohort_datagrams_total Authenticated datagrams (SWIM's probes), sent and received.\n# TYPE cohort_datagrams_total counter\n")
		fmt.Fprintf(w, "cohort_datagrams_total{dir=\"sent\"} %d\ncohort_datagrams_total{dir=\"received\"} %d\n", d.Sent, d.Received)
		fmt.Fprintf(w, "# HELP cohort_datagrams_dropped_total Datagrams dropped unread, by reason (forged: no valid MAC for this member; replayed: seen already or from a sender's previous process; stale: over two minutes from this node's clock).\n# TYPE cohort_datagrams_dropped_total counter\n")
		for _, r := range []struct {
			reason string
			n      uint64
		}{{"malformed", d.Malformed}, {"forged", d.Forged}, {"unknown", d.Unknown}, {"stale", d.Stale}, {"replayed", d.Replayed}} {
			fmt.Fprintf(w, "cohort_datagrams_dropped_total{reason=%q} %d\n", r.reason, r.n)
		}
	}
	fmt.Fprintf(w, "# HELP cohort_handshakes_rejected_total Inbound connections closed during the handshake.\n# TYPE cohort_handshakes_rejected_total counter\ncohort_handshakes_rejected_total %d\n", st.Rejected)
}

type transportPeer = transport.PeerStats

// MetricsHandler serves WriteMetrics at /metrics.
func (n *Node) MetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		n.WriteMetrics(w)
	})
}
