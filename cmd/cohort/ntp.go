package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/cohort-go/cohort/ntp"
	"github.com/spf13/cobra"
)

func newNTPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ntp",
		Short: "Serve and query time over NTP (RFC 5905), interoperable with chrony",
		Long: `Serve this machine's clock over NTP, or measure how far an NTP server's
clock is from this machine's: the offset θ and delay δ of Cristian's
algorithm and NTP, on the wire. Works with chrony, ntpd and any other NTP implementation.`,
	}
	cmd.AddCommand(newNTPServeCmd(), newNTPQueryCmd())
	return cmd
}

// ntpServeOptions are the flags of cohort ntp serve.
type ntpServeOptions struct {
	listen  string
	stratum int
	refid   string
	offset  time.Duration
}

func newNTPServeCmd() *cobra.Command {
	var o ntpServeOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Answer NTP clients with this machine's clock",
		Long: `Answer NTP client requests with this machine's clock until SIGINT or
SIGTERM. The server is synchronised to nothing, and says so the way an
undisciplined local clock traditionally does: stratum 10 and reference id
LOCL by default. Clients that hear a better server prefer it; clients with
nothing better take this one (chrony, for one, accepts it).

--offset serves the clock shifted, so that a client has a known offset to
measure. Port 123 needs privileges; the default port does not.`,
		Example: `  cohort ntp serve --listen 127.0.0.1:1123 --offset 250ms &
  cohort ntp query 127.0.0.1:1123`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runNTPServe(ctx, o, cmd.OutOrStdout(), nil)
		},
	}
	cmd.Flags().StringVar(&o.listen, "listen", "127.0.0.1:1123", "UDP address to serve on")
	cmd.Flags().IntVar(&o.stratum, "stratum", ntp.DefaultStratum, "stratum to announce, 1 to 15")
	cmd.Flags().StringVar(&o.refid, "refid", "LOCL", "reference id to announce: up to 4 ASCII characters, or an IPv4 address")
	cmd.Flags().DurationVar(&o.offset, "offset", 0, "serve the clock shifted by this much (e.g. 250ms, -1s)")
	return cmd
}

// runNTPServe serves until ctx ends. ready, if set, receives the address
// served once the socket is open.
func runNTPServe(ctx context.Context, o ntpServeOptions, out io.Writer, ready func(addr string)) error {
	if o.stratum < 1 || o.stratum > 15 {
		return usageErr("--stratum %d: want 1 to 15", o.stratum)
	}
	refid, err := ntp.RefIDOf(o.refid)
	if err != nil {
		return usageErr("--refid: %v", err)
	}
	cfg := ntp.ServerConfig{Stratum: uint8(o.stratum), RefID: refid}
	if o.offset != 0 {
		cfg.Clock = func() time.Time { return time.Now().Add(o.offset) }
	}
	srv, err := ntp.NewServer(cfg)
	if err != nil {
		return usageErr("%v", err)
	}
	conn, err := net.ListenPacket("udp", o.listen)
	if err != nil {
		return usageErr("--listen %q: %v", o.listen, err)
	}
	addr := conn.LocalAddr().String()
	shift := ""
	if o.offset != 0 {
		shift = fmt.Sprintf(", clock shifted by %v", o.offset)
	}
	fmt.Fprintf(out, "cohort ntp: serving on %s (stratum %d, refid %s%s)\n", addr, o.stratum, o.refid, shift)
	if ready != nil {
		ready(addr)
	}
	if err := srv.Serve(ctx, conn); err != nil {
		return &exitError{1, err}
	}
	s := srv.Stats()
	fmt.Fprintf(out, "cohort ntp: stopped; served %d, ignored %d malformed and %d of other modes, %d replies not sent\n",
		s.Served, s.Malformed, s.WrongMode, s.SendFailed)
	return nil
}

func newNTPQueryCmd() *cobra.Command {
	var c ntp.Client
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "query ADDR",
		Short: "Measure an NTP server's clock offset and the network delay",
		Long: `Send --samples NTP requests to ADDR (host:port, or host for port 123) and
print, for each, the offset θ = ((T2−T1)+(T3−T4))/2 of the server's clock
from this machine's (positive: the server is ahead) and the delay
δ = (T4−T1)−(T3−T2), the round trip as RFC 5905 and chrony report it, with
its half, the one-way estimate. The sample of least delay is the answer,
NTP's rule: its θ is the least distorted by unequal legs. This machine's
clock is never changed.

Exit status 1 if no sample gets a valid reply, or the server sends a
kiss-o'-death.`,
		Example: `  cohort ntp query 127.0.0.1:1123
  cohort ntp query pool.ntp.org --samples 4 --interval 2s --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if c.Samples < 1 {
				return usageErr("--samples %d: want at least 1", c.Samples)
			}
			if c.Timeout <= 0 {
				return usageErr("--timeout %v: want a positive duration", c.Timeout)
			}
			if c.Wait < 0 {
				return usageErr("--wait %v: want 0 or more", c.Wait)
			}
			if c.Interval < 0 {
				return usageErr("--interval %v: want 0 or more", c.Interval)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			r, err := c.Query(ctx, args[0])
			if err != nil {
				return &exitError{1, err}
			}
			if asJSON {
				return printNTPJSON(cmd.OutOrStdout(), r)
			}
			printNTPResult(cmd.OutOrStdout(), r)
			return nil
		},
	}
	cmd.Flags().IntVar(&c.Samples, "samples", 4, "requests to send; the least delay wins")
	cmd.Flags().DurationVar(&c.Interval, "interval", 0, "pause between requests (public servers may rate-limit: 2s is polite)")
	cmd.Flags().DurationVar(&c.Timeout, "timeout", ntp.DefaultTimeout, "wait for each reply at most this long")
	cmd.Flags().DurationVar(&c.Wait, "wait", 2*time.Second, "keep asking a server that refuses (still starting) for up to this long")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// signed shows a duration with its sign: offsets are read for their
// direction.
func signed(d time.Duration) string {
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func printNTPResult(w io.Writer, r ntp.Result) {
	fmt.Fprintf(w, "server %s  stratum %d  refid %s  leap %d  precision 2^%d s  root delay %v  root dispersion %v\n\n",
		r.Server, r.Stratum, r.RefID.Format(r.Stratum), r.Leap, r.Precision, r.RootDelay, r.RootDispersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SAMPLE\tOFFSET θ\tDELAY δ\tONE WAY δ/2")
	for i, s := range r.Samples {
		fmt.Fprintf(tw, "%d\t%s\t%v\t%v", i+1, signed(s.Offset), s.Delay, s.OneWay)
		if i == r.Best {
			fmt.Fprint(tw, "\tleast delay")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	lost := ""
	if r.Lost > 0 {
		lost = fmt.Sprintf(", %d lost", r.Lost)
	}
	fmt.Fprintf(w, "\noffset %s  delay %v (one way %v)  from %d sample(s)%s\n",
		signed(r.Offset), r.Delay, r.OneWay, len(r.Samples), lost)
}

// ntpJSONSample and ntpJSON are the --json output: durations in
// nanoseconds, times in RFC 3339.
type ntpJSONSample struct {
	OffsetNS int64     `json:"offset_ns"`
	DelayNS  int64     `json:"delay_ns"`   // δ, the round trip (RFC 5905)
	OneWayNS int64     `json:"one_way_ns"` // δ/2
	T1       time.Time `json:"t1"`
	T2       time.Time `json:"t2"`
	T3       time.Time `json:"t3"`
	T4       time.Time `json:"t4"`
}

type ntpJSON struct {
	Server           string          `json:"server"`
	Stratum          uint8           `json:"stratum"`
	RefID            string          `json:"refid"`
	Leap             uint8           `json:"leap"`
	Precision        int8            `json:"precision"`
	RootDelayNS      int64           `json:"root_delay_ns"`
	RootDispersionNS int64           `json:"root_dispersion_ns"`
	OffsetNS         int64           `json:"offset_ns"`
	DelayNS          int64           `json:"delay_ns"`
	OneWayNS         int64           `json:"one_way_ns"`
	Best             int             `json:"best"`
	Lost             int             `json:"lost"`
	Samples          []ntpJSONSample `json:"samples"`
}

func printNTPJSON(w io.Writer, r ntp.Result) error {
	j := ntpJSON{
		Server: r.Server, Stratum: r.Stratum, RefID: r.RefID.Format(r.Stratum), Leap: uint8(r.Leap), Precision: r.Precision,
		RootDelayNS: int64(r.RootDelay), RootDispersionNS: int64(r.RootDispersion),
		OffsetNS: int64(r.Offset), DelayNS: int64(r.Delay), OneWayNS: int64(r.OneWay),
		Best: r.Best, Lost: r.Lost,
	}
	for _, s := range r.Samples {
		j.Samples = append(j.Samples, ntpJSONSample{
			OffsetNS: int64(s.Offset), DelayNS: int64(s.Delay), OneWayNS: int64(s.OneWay),
			T1: s.T1.UTC(), T2: s.T2, T3: s.T3, T4: s.T4.UTC(),
		})
	}
	enc := json.NewEncoder(w)
	return enc.Encode(j)
}
