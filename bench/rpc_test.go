package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"

	"github.com/cohort-go/cohort/pool"
	"github.com/cohort-go/cohort/rpc"
)

// The comparison: grpc-go (a test-only dependency) on the same loopback,
// with the same 128-byte payload echoed, unencoded on both sides: gRPC
// with a codec that passes bytes through (no protobuf), Cohort with
// []byte arguments (no JSON).

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	p := v.(*[]byte)
	*p = append((*p)[:0], data...)
	return nil
}
func (rawCodec) Name() string { return "raw" }

func init() { encoding.RegisterCodec(rawCodec{}) }

var echoDesc = grpc.ServiceDesc{
	ServiceName: "bench.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Echo", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		var b []byte
		if err := dec(&b); err != nil {
			return nil, err
		}
		return &b, nil
	}}},
}

// runGRPC is RunRPC's calls on grpc-go: a server and a client connection
// on loopback.
func runGRPC(ctx context.Context, callers, calls, payloadLen int) (RPCResult, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return RPCResult{}, err
	}
	srv := grpc.NewServer()
	srv.RegisterService(&echoDesc, struct{}{})
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return RPCResult{}, err
	}
	defer conn.Close()
	payload := make([]byte, payloadLen)
	_, _ = rand.Read(payload)
	call := func(ctx context.Context) error {
		var out []byte
		if err := conn.Invoke(ctx, "/bench.Echo/Echo", &payload, &out, grpc.CallContentSubtype("raw")); err != nil {
			return err
		}
		if len(out) != len(payload) {
			return fmt.Errorf("echo returned %d bytes", len(out))
		}
		return nil
	}
	if err := call(ctx); err != nil {
		return RPCResult{}, err
	}
	return Drive(ctx, callers, calls, 0, call)
}

func TestRPCRunsSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, sem := range []rpc.Semantics{rpc.Maybe, rpc.AtLeastOnce, rpc.AtMostOnce} {
		r, err := RunRPC(ctx, RPCConfig{Sem: sem, Callers: 4, Calls: 100, Disk: sem == rpc.AtMostOnce})
		if err != nil || r.Calls != 100 || r.P99 < r.P50 || r.PerSec <= 0 {
			t.Fatalf("%s: %+v, %v", sem, r, err)
		}
	}
	r, err := runGRPC(ctx, 4, 100, 128)
	if err != nil || r.Calls != 100 {
		t.Fatalf("grpc: %+v, %v", r, err)
	}
	r, err = RunRPC(ctx, RPCConfig{Sem: rpc.AtLeastOnce, Callers: 8, Calls: 80, Bursts: time.Millisecond, Pool: &pool.Config{Size: 4}})
	if err != nil || r.Pool.Size != 4 {
		t.Fatalf("bursts, pool of 4: %+v, %v", r, err)
	}
}

func report(b *testing.B, rs []RPCResult) {
	m := Median(rs)
	b.ReportMetric(m.PerSec, "calls/s")
	b.ReportMetric(m.P50us, "p50-µs")
	b.ReportMetric(m.P99us, "p99-µs")
	b.ReportMetric(0, "ns/op") // a run is many calls: ns/op says nothing
}

// BenchmarkRPCLoopback: calls per second and p50/p99 latency of an echo of
// 128 bytes on loopback, Cohort's live RPC under each semantics beside
// grpc-go, with 1 and 16 callers. Each iteration is one run of 2000
// calls; the metrics are the medians over the iterations:
//
//	go test -run '^$' -bench RPCLoopback -benchtime 5x ./bench
func BenchmarkRPCLoopback(b *testing.B) {
	const calls = 2000
	ctx := context.Background()
	for _, callers := range []int{1, 16} {
		for _, sys := range []struct {
			name string
			cfg  RPCConfig
		}{
			{"cohort-maybe-disk", RPCConfig{Sem: rpc.Maybe, Disk: true}},
			{"cohort-at-least-once", RPCConfig{Sem: rpc.AtLeastOnce}},
			{"cohort-at-most-once", RPCConfig{Sem: rpc.AtMostOnce}},
			{"cohort-at-most-once-disk", RPCConfig{Sem: rpc.AtMostOnce, Disk: true}},
			{"grpc-go", RPCConfig{}},
		} {
			b.Run(fmt.Sprintf("%s/callers=%d", sys.name, callers), func(b *testing.B) {
				var rs []RPCResult
				for range b.N {
					var r RPCResult
					var err error
					if sys.name == "grpc-go" {
						r, err = runGRPC(ctx, callers, calls, 128)
					} else {
						c := sys.cfg
						c.Callers, c.Calls, c.Payload = callers, calls, 128
						if c.Disk {
							c.Calls = calls / 4 // fsyncs are slow
						}
						r, err = RunRPC(ctx, c)
					}
					if err != nil {
						b.Fatal(err)
					}
					rs = append(rs, r)
				}
				report(b, rs)
			})
		}
	}
}

// BenchmarkRPCPoolBursty: the live RPC server's worker pool at fixed
// sizes beside the self-sized one, under bursts of 32 at-least-once calls
// at once every millisecond, each procedure sleeping 100µs:
//
//	go test -run '^$' -bench RPCPoolBursty -benchtime 5x ./bench
func BenchmarkRPCPoolBursty(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{0, 1, 4, 16, 64, -1} {
		name, pc := fmt.Sprintf("size=%d", size), &pool.Config{Size: size}
		if size < 0 {
			name, pc = "self-sized", &pool.Config{Auto: true}
		}
		b.Run(name, func(b *testing.B) {
			var rs []RPCResult
			var sizes []int
			var c1, c2 []float64
			for range b.N {
				r, err := RunRPC(ctx, RPCConfig{Sem: rpc.AtLeastOnce, Callers: 32, Calls: 3200, Bursts: time.Millisecond,
					Work: 100 * time.Microsecond, Pool: pc})
				if err != nil {
					b.Fatal(err)
				}
				rs = append(rs, r)
				sizes = append(sizes, r.Pool.Size)
				c1, c2 = append(c1, r.Pool.C1), append(c2, r.Pool.C2)
			}
			report(b, rs)
			slices.Sort(sizes)
			slices.Sort(c1)
			slices.Sort(c2)
			b.ReportMetric(float64(sizes[len(sizes)/2]), "size")
			if size < 0 {
				b.ReportMetric(c1[len(c1)/2], "c1-ns")
				b.ReportMetric(c2[len(c2)/2], "c2-ns")
			}
		})
	}
}
