package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cohort-go/cohort/lab"
	"github.com/cohort-go/cohort/trace"
	"github.com/cohort-go/cohort/viewer"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// simMulticast handles the multicast family's flags of `cohort sim`:
// --order, another name for --algo, and --demo. It reports whether it ran
// the command itself (a demonstration); otherwise runSim goes on, with
// --order copied to --algo.
func simMulticast(cmd *cobra.Command, family string, f *simFlags) (bool, error) {
	fl := cmd.Flags()
	if !fl.Changed("order") && !fl.Changed("demo") {
		return false, nil
	}
	if family != "multicast" {
		name := "--order"
		if fl.Changed("demo") {
			name = "--demo"
		}
		return true, usageErr("%s is a flag of the multicast family, not of %s", name, family)
	}
	if fl.Changed("order") {
		if f.algo != "" && f.algo != f.order {
			return true, usageErr("--order %s and --algo %s: they name the same thing; give one", f.order, f.algo)
		}
		f.algo = f.order
	}
	if !fl.Changed("demo") {
		return false, nil
	}
	if f.demo != "bank" {
		return true, usageErr("--demo %q: the multicast family's demonstration is bank", f.demo)
	}
	return true, runBankDemo(cmd, f)
}

// bankFlags are the flags the bank demonstration reads; it sets its own
// network and inputs.
var bankFlags = []string{"demo", "order", "algo", "nodes", "seed", "svg", "shiviz", "trace", "json", "states", "view", "view-listen"}

// runBankDemo runs Tanenbaum & van Steen's replicated bank account (§6.2)
// under basic multicast and under the chosen order, and prints each
// replica's balance.
func runBankDemo(cmd *cobra.Command, f *simFlags) error {
	var stray []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if !slices.Contains(bankFlags, fl.Name) {
			stray = append(stray, "--"+fl.Name)
		}
	})
	if len(stray) > 0 {
		return usageErr("--demo bank sets its own network and inputs: drop %s (it takes --nodes, --seed, --order, --svg, --shiviz, --trace, --json, --states, --view)", strings.Join(stray, ", "))
	}
	n := 2
	if cmd.Flags().Changed("nodes") {
		n = f.nodes
	}
	order := f.algo
	if order == "" {
		order = "total-sequencer"
	}
	algos := []string{"basic"}
	if order != "basic" {
		algos = append(algos, order)
	}
	out := cmd.OutOrStdout()
	if !f.json {
		fmt.Fprintf(out, "bank demo (Tanenbaum & van Steen §6.2): %s replicated on %d nodes; at 1ms p0 multicasts %q and p1 %q (seed %d)\n",
			lab.Dollars(100_000), n, "deposit $100", "add 1% interest", f.seed)
	}
	fam, _ := lab.Lookup("multicast")
	failed := false
	var wrote []string
	var traces []*trace.Trace
	var pages []*viewer.Page // for --view: the runs one above the other
	for _, algo := range algos {
		demo := lab.BankDemo
		if f.states || f.view {
			demo = lab.BankDemoStates
		}
		b, err := demo(algo, n, f.seed)
		if err != nil {
			return usageErr("%v", err)
		}
		failed = failed || b.Report.Failed()
		if f.json {
			if err := printBankJSON(out, b); err != nil {
				return err
			}
		} else {
			printBank(out, b)
		}
		files, err := writeBankRenderings(b, f, len(algos), fam.Diagram)
		if err != nil {
			return err
		}
		wrote = append(wrote, files...)
		traces = append(traces, b.Trace)
		var balances []string
		for _, x := range b.Balances {
			balances = append(balances, lab.Dollars(x))
		}
		pages = append(pages, &viewer.Page{Title: fmt.Sprintf("multicast/%s — bank, seed %d: %s", b.Algo, f.seed, strings.Join(balances, " / ")),
			Trace: b.Trace, Checks: reportChecks(b.Report), Shades: reportShades(b.Report)})
	}
	if f.shivizOut != "" {
		// One log of both runs: ShiViz shows them side by side and diffs
		// them.
		if err := writeShiViz(f.shivizOut, cmd.ErrOrStderr(), traces...); err != nil {
			return err
		}
		wrote = append(wrote, f.shivizOut)
	}
	if !f.json {
		if len(wrote) > 0 {
			fmt.Fprintln(out)
		}
		for _, file := range wrote {
			fmt.Fprintf(out, "  wrote %s\n", file)
		}
	}
	if f.view {
		page := pages[0]
		if len(pages) == 2 {
			var err error
			if page, err = viewer.Pair(pages[0], pages[1]); err != nil {
				return err
			}
		}
		if err := showPage(cmd, page, "", f.viewListen); err != nil {
			return err
		}
	}
	if failed {
		return errChecksFailed
	}
	return nil
}

func printBank(w io.Writer, b *lab.BankRun) {
	verdict := "the replicas agree"
	if !b.Agree() {
		verdict = "the replicas disagree"
	}
	fmt.Fprintf(w, "\nmulticast/%s: %s\n", b.Algo, verdict)
	for p, cents := range b.Balances {
		fmt.Fprintf(w, "  p%d  %s  %s\n", p, lab.Dollars(cents), b.Describe(p))
	}
	for _, c := range b.Report.Checks {
		if c.Failed() {
			fmt.Fprintf(w, "\n%s\n", indent(c.Counterexample))
		}
	}
	for _, c := range b.Report.Checks {
		if c.Name == "total-order" && !c.OK {
			fmt.Fprintf(w, "  total-order %s: %s\n", c.Status, c.Detail)
		}
	}
}

func printBankJSON(w io.Writer, b *lab.BankRun) error {
	balances := make([]string, len(b.Balances))
	for p, c := range b.Balances {
		balances[p] = lab.Dollars(c)
	}
	return json.NewEncoder(w).Encode(map[string]any{
		"demo": "bank", "algo": b.Algo, "nodes": len(b.Balances), "seed": b.Report.Seed,
		"balances": balances, "cents": b.Balances, "applied": b.Applied, "agree": b.Agree(),
		"report": b.Report,
	})
}

// writeBankRenderings writes the run's trace and space-time diagram, one
// file per algorithm (bank.svg becomes bank-basic.svg ...).
func writeBankRenderings(b *lab.BankRun, f *simFlags, runs int, diagram trace.SVGOptions) ([]string, error) {
	var files []string
	if f.svgOut != "" {
		path := perAlgo(f.svgOut, b.Algo, runs)
		balances := make([]string, len(b.Balances))
		for p, c := range b.Balances {
			balances[p] = lab.Dollars(c)
		}
		opt := diagram
		opt.Violations, opt.Shades = reportViolations(b.Report), reportShades(b.Report)
		opt.Title = fmt.Sprintf("multicast/%s — bank, seed %d: %s", b.Algo, b.Report.Seed, strings.Join(balances, " / "))
		if err := writeFile(path, func(w io.Writer) error { return trace.WriteSVG(w, b.Trace, opt) }); err != nil {
			return nil, usageErr("--svg: %v", err)
		}
		files = append(files, path)
	}
	if f.traceOut != "" {
		path := perAlgo(f.traceOut, b.Algo, runs)
		if err := writeFile(path, func(w io.Writer) error { return trace.Write(w, b.Trace) }); err != nil {
			return nil, usageErr("--trace: %v", err)
		}
		files = append(files, path)
	}
	return files, nil
}
