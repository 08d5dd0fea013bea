package main

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The example configuration of a three-machine cluster under deploy/ is
// valid and consistent, and the cluster it describes runs: started here
// with its addresses moved to loopback, every node answers /v1/health,
// and only with the API token.
func TestDeployExampleCluster(t *testing.T) {
	files, _ := filepath.Glob("../../deploy/machines/node*.yaml")
	if len(files) != 3 {
		t.Fatalf("deploy/machines has %d node files, want 3", len(files))
	}
	dataDir := regexp.MustCompile(`(?m)^data_dir:.*$`)
	var cfgs []*nodeConfig
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data := t.TempDir() // each machine's own /var/lib/cohort
		os.WriteFile(filepath.Join(data, "cluster.secret"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600)
		os.WriteFile(filepath.Join(data, "api.token"), []byte("example-token\n"), 0o600)
		local := filepath.Join(t.TempDir(), filepath.Base(f))
		os.WriteFile(local, dataDir.ReplaceAll(src, []byte("data_dir: "+data)), 0o644)
		c, err := loadNodeConfig(local, "")
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cfgs = append(cfgs, c)
	}
	for i, c := range cfgs {
		if c.ID != i || !maps.Equal(c.Peers, cfgs[0].Peers) || c.Secret != cfgs[0].Secret || c.APIToken != "example-token" {
			t.Fatalf("%s: id %d, peers %v, token %q: the files disagree", files[i], c.ID, c.Peers, c.APIToken)
		}
	}

	// The same cluster on loopback: free ports for the transports, the
	// APIs on ephemeral ones.
	peers := map[int]string{}
	for i := range cfgs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		peers[i] = l.Addr().String()
		l.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	apis := make(chan string, len(cfgs))
	done := make(chan error, len(cfgs))
	for i, c := range cfgs {
		c.Peers, c.Listen, c.API = peers, peers[i], "127.0.0.1:0"
		c.Trace = ""
		go func() {
			done <- runNode(ctx, c, slog.New(slog.NewTextHandler(io.Discard, nil)), func(api string) { apis <- api })
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range cfgs {
			<-done
		}
	})
	for range cfgs {
		var api string
		select {
		case api = <-apis:
		case err := <-done:
			t.Fatalf("a node stopped: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("a node did not serve within 10s")
		}
		get := func(token string) int {
			req, _ := http.NewRequest("GET", "http://"+api+"/v1/health", nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := get("example-token"); got != http.StatusOK {
			t.Errorf("%s /v1/health with the token: %d", api, got)
		}
		if got := get(""); got != http.StatusUnauthorized {
			t.Errorf("%s /v1/health without the token: %d, want 401", api, got)
		}
	}
	// The unit file names the binary and the config the README says.
	unit, err := os.ReadFile("../../deploy/machines/cohort.service")
	if err != nil || !strings.Contains(string(unit), "ExecStart=/usr/local/bin/cohort node --config /etc/cohort/node.yaml") {
		t.Errorf("cohort.service: %v", err)
	}
}
