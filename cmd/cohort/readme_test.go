package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeExamplesRun runs every command of the README's "Using it"
// block, as written, from a directory holding the scenario files it names.
// A few cannot run as written inside a unit test; each of those is run in
// a bounded variant (same command, smaller figures) or is exercised by a
// named test of this package, and the table below says which and why. A
// README command this test does not know fails it, so a new example must
// come with a way to check it.
func TestReadmeExamplesRun(t *testing.T) {
	bounded := map[string]struct {
		args []string // run these instead; nil: exercised by test
		test string   // the test that exercises it
		why  string
	}{
		"cohort bench sim --json": {args: []string{"bench", "sim", "--json", "--nodes", "20000"},
			why: "the scale run takes 10 s and 1.3 GB; the same code path at 20,000 processes"},
		"cohort bench multicast": {args: []string{"bench", "multicast", "--duration", "200ms", "--window", "1"},
			why: "3 s per configuration by default"},
		"cohort bench multicast --algo raft --window 1024 --rate 50000 --cpuprofile cpu.prof": {args: []string{"bench", "multicast", "--algo", "raft", "--duration", "200ms", "--window", "16", "--rate", "1000", "--cpuprofile", "cpu.prof"},
			why: "3 s at 50,000 messages a second; the same path, smaller"},
		"cohort compare gossip --nodes 1000,100000,1000000": {test: "TestCompareGossip", why: "about 10 minutes of CPU at three sizes; the test runs the same comparison at a small size"},
		"cohort compare rpc --nodes 4 --plot rpc.svg":       {test: "TestCompareRPC", why: "35 runs of 1,000 calls (half a minute under the race detector); the test runs the same comparison with 3 nodes"},
		"cohort bench elect":                                {test: "TestBenchElect", why: "kills real processes, several runs; the test runs it with 3 nodes and 2 runs"},
		"cohort bench nemesis --duration 30s":               {test: "TestBenchNemesis", why: "kills and pauses real processes for 30 s; the test runs it for 8 s"},
		"cohort bench restart":                              {test: "TestBenchRestart", why: "kills every process of a cluster 5 times; the test does it twice"},
		"cohort ntp serve --listen 127.0.0.1:1123 & cohort ntp query 127.0.0.1:1123": {test: "TestNTPServeAndQuery",
			why: "a server until interrupted, on a fixed port; the query's wait for a starting server is ntp's TestQueryWaitsForAServerThatIsStarting"},
		"cohort cluster up --nodes 3 --json":                   {test: "TestClusterOfProcessesLocks", why: "runs until Ctrl-C"},
		"cohort lock NAME --endpoints HOST:PORT -- CMD":        {test: "TestClusterOfProcessesLocks", why: "needs a running cluster"},
		"cohort elect NAME --endpoints HOST:PORT":              {test: "TestElectCommand", why: "needs a running cluster"},
		"cohort multicast NAME --listen --endpoints HOST:PORT": {test: "TestMulticastCommand", why: "needs a running cluster"},
		"cohort cluster up --nodes 3 --members --json":         {test: "TestNodeJoinsARunningCluster", why: "runs until Ctrl-C"},
		"cohort node --config node.yaml --join 0@HOST:PORT":    {test: "TestNodeJoinsARunningCluster", why: "needs a running cluster"},
		"cohort members --endpoints HOST:PORT":                 {test: "TestNodeJoinsARunningCluster", why: "needs a running cluster"},
		"cohort kv put KEY VALUE --endpoints HOST:PORT":        {test: "TestNodeJoinsARunningCluster", why: "needs a running cluster"},
		"cohort discover find NAME -k 3 --endpoints HOST:PORT": {test: "TestDiscoverCommands", why: "needs a running cluster"},
		"cohort queue put NAME TEXT --endpoints HOST:PORT":     {test: "TestReplicatedQueueSurvivesKillAndRestart", why: "needs a running cluster"},
		"cohort cluster up --nodes 4 --members --dht --json":   {test: "TestDHTAndScribeCommands", why: "runs until Ctrl-C"},
		"cohort dht put KEY VALUE --endpoints HOST:PORT":       {test: "TestDHTAndScribeCommands", why: "needs a running cluster"},
		"cohort scribe listen GROUP --endpoints HOST:PORT":     {test: "TestDHTAndScribeCommands", why: "needs a running cluster, and listens until Ctrl-C"},
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Using it\n")
	if !ok {
		t.Fatal(`README has no "## Using it" section`)
	}
	_, block, _ := strings.Cut(rest, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	cmds := readmeCommands(block)
	if len(cmds) < 20 {
		t.Fatalf("found %d commands in the README's examples; the parser is broken", len(cmds))
	}

	testSrc := testSources(t)
	bin := cohortBinary(t)
	dir := t.TempDir()
	copyTree(t, "../../scenario/testdata", filepath.Join(dir, "scenario", "testdata"))
	seen := map[string]bool{}
	for _, c := range cmds {
		args := shellWords(strings.TrimPrefix(c, "cohort "))
		if b, ok := bounded[c]; ok {
			seen[c] = true
			if b.args == nil {
				if !strings.Contains(testSrc, "func "+b.test+"(") {
					t.Errorf("%q: exercised by %s, which does not exist", c, b.test)
				}
				continue
			}
			args = b.args
		}
		// The built binary, as a reader runs it (and without the race
		// detector, which the in-process tests cover).
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README example %q (run as cohort %s): %v\n%s", c, strings.Join(args, " "), err, tail(out, 4096))
		}
	}
	for c := range bounded {
		if !seen[c] {
			t.Errorf("%q is no longer in the README: drop it from this test", c)
		}
	}
}

// readmeCommands returns the commands of a shell block: continuation lines
// joined, comments dropped.
func readmeCommands(block string) []string {
	var cmds []string
	comment := regexp.MustCompile(`\s#(\s.*)?$`)
	var cur string
	for _, line := range strings.Split(block, "\n") {
		line = comment.ReplaceAllString(line, "")
		line = strings.TrimSpace(line)
		if strings.HasSuffix(line, `\`) {
			cur += strings.TrimSuffix(line, `\`) + " "
			continue
		}
		line = strings.Join(strings.Fields(cur+line), " ")
		cur = ""
		if strings.HasPrefix(line, "cohort ") {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// shellWords splits a command line as a shell would, for the quoting the
// README uses: double or single quotes group words.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	var quote rune // the quote mark of the quoted part we are in; 0 outside
	inWord := false
	for _, r := range s {
		switch {
		case (r == '"' || r == '\'') && (quote == 0 || quote == r):
			if quote == 0 {
				quote = r
			} else {
				quote = 0
			}
			inWord = true
		case r == ' ' && quote == 0:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func testSources(t *testing.T) string {
	t.Helper()
	files, _ := filepath.Glob("*_test.go")
	var b strings.Builder
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(src)
	}
	return b.String()
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Every scenario file under testdata runs through the CLI with the family
// it names, and passes its checks (or runs outside its algorithm's
// assumptions, which the run says).
func TestTestdataScenariosRun(t *testing.T) {
	files, _ := filepath.Glob("../../*/testdata/*.yaml")
	if len(files) < 5 {
		t.Fatalf("found %d scenario files", len(files))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^family:\s*(\S+)`).FindStringSubmatch(string(src))
		if m == nil {
			t.Errorf("%s names no family: a scenario under testdata must say what it is for", f)
			continue
		}
		code, _, errs := cli(t, "sim", m[1], "--scenario", f)
		if code != 0 {
			t.Errorf("cohort sim %s --scenario %s: exit %d\n%s", m[1], f, code, errs)
		}
	}
}

// tail is the last n bytes of b, for an error message.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
