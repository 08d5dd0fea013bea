package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cohort-go/cohort/liverpc/rpcgen"
	"github.com/spf13/cobra"
)

func newRPCGenCmd() *cobra.Command {
	var typ, output string
	cmd := &cobra.Command{
		Use:   "gen --type NAME [-o FILE] DIR|FILE.go...",
		Short: "Generate the RPC stubs of a Go interface",
		Long: `Reads the Go interface NAME from the package in DIR (or from the .go
files given, of one directory), type-checks it, and writes its stubs over
package liverpc: a client (NAMEClient, which implements NAME: each method
packs its arguments with package wire and calls the server through
liverpc, with the options' semantics and the context's deadline and
cancellation) and a server dispatcher (RegisterNAME, which registers
each method as the procedure "NAME.Method", unpacks its arguments and
calls the implementation). The stubs encode and decode field by field,
without reflection; the output is gofmt'd and the same for the same
input.

Every method must take a context.Context first and return an error last;
its other parameters and results may be booleans, integers, floats,
strings, []byte, and slices and structs (of exported fields) of these,
named or not.

Without -o the stubs go to standard output. Exit status: 0 with the
stubs; 2 for bad usage or an interface the generator cannot make stubs
of (the error names the method, the value and its type); 1 if the file
cannot be written.`,
		Example: `  cohort rpc gen --type Bank -o bank_rpc.go .
  //go:generate go run github.com/cohort-go/cohort/cmd/cohort rpc gen --type Bank -o bank_rpc.go .`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if typ == "" {
				return usageErr("--type: want the interface's name")
			}
			if output != "" && filepath.Ext(output) != ".go" {
				return usageErr("-o %q: want a .go file", output)
			}
			src, err := rpcgen.Generate(rpcgen.Config{Type: typ, Inputs: args, Output: output})
			if err != nil {
				return usageErr("rpc gen: %v", err)
			}
			if output == "" {
				_, err = cmd.OutOrStdout().Write(src)
				return err
			}
			if dir := filepath.Dir(args[0]); filepath.Dir(output) == "." {
				if st, err := os.Stat(args[0]); err == nil && st.IsDir() {
					dir = args[0]
				}
				output = filepath.Join(dir, output)
			}
			if err := os.WriteFile(output, src, 0o644); err != nil {
				return fmt.Errorf("rpc gen: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&typ, "type", "", "the interface's name")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the stubs to this file, in the package's directory if it names no directory (default: standard output)")
	return cmd
}
